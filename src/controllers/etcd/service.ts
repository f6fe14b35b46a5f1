/**
 * etcd.ServiceController: runs the etcd service on a node with an EtcdSpec (control planes) and its certificates.
 * As upstream, the service reads the spec and certificates each time it starts, and a change of the spec (say, a
 * new hostname) does not restart a running etcd: membership is fixed once it has joined. No spec → no etcd.
 * A node with an empty data directory joins through the control planes (every merged control-plane Endpoints
 * address on etcd's client port, read at each attempt), as upstream's etcd.NewClientFromControlPlaneIPs.
 */
import { joinHostPort, mergedEndpoints } from "../../machinery/kubernetes/endpoint-list.js";
import { pointer, readAll, readSpec } from "../../machinery/resources/read.js";
import { CONTROLPLANE_NS, EndpointType } from "../../machinery/resources/types/k8s-status.js";
import { ETCD_ID, EtcdSpecType } from "../../machinery/resources/types/etcd.js";
import { EtcdCertsType, EtcdRootType, SECRET_IDS } from "../../machinery/resources/types/secrets.js";
import type { ResourceReader } from "../../machinery/resources/read.js";
import { tlsKeyPem } from "../../machinery/pki/pem.js";
import { EtcdService, type EtcdPki, type EtcdServiceOptions } from "../../supervisor/index.js";
import type { ServiceHost } from "../../supervisor/types.js";
import type { Controller } from "../../state/runtime/index.js";

export interface EtcdServiceControllerOptions {
  services: ServiceHost;
  /** The store the running service reads its spec and certificates from at each start. */
  state: Pick<ResourceReader, "get" | "list">;
  /** Where the data and PEM files live, and test-only placement (ports, timings). */
  service: Omit<EtcdServiceOptions, "spec" | "pki" | "controlPlaneEndpoints">;
}

export function etcdServiceController(o: EtcdServiceControllerOptions): Controller {
  return {
    name: "etcd.ServiceController",
    inputs: [
      { ...pointer(EtcdSpecType, ETCD_ID), kind: "weak" },
      { ...pointer(EtcdCertsType, SECRET_IDS.etcd), kind: "weak" },
    ],
    outputs: [],
    async reconcile(ctx) {
      if (!readSpec(ctx, EtcdSpecType, ETCD_ID) || !readSpec(ctx, EtcdCertsType, SECRET_IDS.etcd)) {
        await o.services.remove("etcd");
        return;
      }
      const service = new EtcdService({
        ...o.service,
        spec: () => readSpec(o.state, EtcdSpecType, ETCD_ID),
        pki: () => etcdPki(o.state),
        controlPlaneEndpoints: () => controlPlaneEtcdEndpoints(o.state, o.service.clientPort ?? 2379),
      });
      await o.services.ensure(service, "etcd");
    },
  };
}

/** The PEM files etcd and machined's etcd client use, from EtcdRootSecrets and EtcdSecrets. */
export function etcdPki(state: Pick<ResourceReader, "get">): EtcdPki | undefined {
  const root = readSpec(state, EtcdRootType, SECRET_IDS.etcd);
  const certs = readSpec(state, EtcdCertsType, SECRET_IDS.etcd);
  if (!root || !certs) return undefined;
  return {
    ca: root.etcdCA.crt,
    serverCert: certs.etcd.crt,
    serverKey: tlsKeyPem(certs.etcd.key),
    peerCert: certs.etcdPeer.crt,
    peerKey: tlsKeyPem(certs.etcdPeer.key),
    clientCert: certs.etcdAdmin.crt,
    clientKey: tlsKeyPem(certs.etcdAdmin.key),
  };
}

/** The control planes' etcd client endpoints: the merged `controlplane` Endpoints on `port` (upstream etcd.GetEndpoints). */
export function controlPlaneEtcdEndpoints(state: Pick<ResourceReader, "list">, port: number): string[] {
  return mergedEndpoints(readAll(state, EndpointType, CONTROLPLANE_NS).map((r) => r.spec)).map((h) => joinHostPort(h, port));
}
