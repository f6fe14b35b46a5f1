/**
 * secrets.EtcdController (control planes): the certificates etcd and its clients use (EtcdSecrets `etcd`), issued
 * from the etcd CA for the node's names — CN = short hostname, SANs = hostname, FQDN and every address the node has
 * had (the client-port certificate adds localhost and loopback) — plus the `talos` (machined) and `kube-apiserver`
 * client certificates. Valid 10 years; issued again when the CA or the names change.
 */
import { issueEtcdClientCert, issueEtcdPeerCert, issueEtcdServerCert } from "../../machinery/pki/issue.js";
import { pointer, read, readSpec } from "../../machinery/resources/read.js";
import {
  fqdn,
  HOSTNAME_ID,
  HostnameStatusType,
  NETWORK_NS,
  NODE_ADDRESS,
  NodeAddressType,
  nodeAddressIPs,
} from "../../machinery/resources/types/network.js";
import { EtcdCertsType, EtcdRootType, SECRET_IDS, type EtcdCertsSpec } from "../../machinery/resources/types/secrets.js";
import type { Controller } from "../../state/runtime/index.js";
import { digest, issuedAnnotations, reissueReason } from "../../machinery/resources/issued.js";

/** Far beyond the certificates' 10 years: renewal is driven by input changes, not time. */
const NEVER_MS = 50 * 365 * 24 * 3_600_000;

export function etcdCertsController(): Controller {
  const ptr = pointer(EtcdCertsType, SECRET_IDS.etcd);
  return {
    name: "secrets.EtcdController",
    inputs: [
      { ...pointer(EtcdRootType, SECRET_IDS.etcd), kind: "weak" },
      { ...pointer(HostnameStatusType, HOSTNAME_ID), kind: "weak" },
      { namespace: NETWORK_NS, type: NodeAddressType.type, id: NODE_ADDRESS.accumulativeNoK8s, kind: "weak" },
    ],
    outputs: [{ type: EtcdCertsType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const root = readSpec(ctx, EtcdRootType, SECRET_IDS.etcd);
      if (!root) {
        ctx.destroy(ptr);
        return;
      }
      const hs = readSpec(ctx, HostnameStatusType, HOSTNAME_ID);
      const addrs = readSpec(ctx, NodeAddressType, NODE_ADDRESS.accumulativeNoK8s);
      if (!hs || !addrs) return;
      const names = { hostname: hs.hostname, addresses: nodeAddressIPs(addrs), dnsNames: [...new Set([hs.hostname, fqdn(hs)])] };
      const inputs = digest({ ca: root.etcdCA.crt, names });
      if (reissueReason(read(ctx, EtcdCertsType, SECRET_IDS.etcd), inputs) === undefined) return;
      const ca = root.etcdCA;
      const [etcd, etcdPeer, etcdAdmin, etcdAPIServer] = await Promise.all([
        issueEtcdServerCert(ca, names),
        issueEtcdPeerCert(ca, names),
        issueEtcdClientCert(ca, "talos"),
        issueEtcdClientCert(ca, "kube-apiserver"),
      ]);
      const spec: EtcdCertsSpec = { etcd, etcdPeer, etcdAdmin, etcdAPIServer };
      ctx.apply({ ...ptr, spec, annotations: issuedAnnotations(inputs, NEVER_MS) });
    },
  };
}
