/**
 * cluster.LocalAffiliateController: the Affiliate this node announces (`cluster`/<node id>) while discovery is on,
 * as upstream builds it: FQDN hostname, node name, machine type, `<OS> (<tag>)`, the routed addresses without
 * Kubernetes ones, and on control planes the API server's local port. KubeSpan is not built here, so its
 * fields stay empty (and the YAML leaves `kubespan` out). Without discovery there is no local affiliate, so no
 * Members either, as upstream.
 */
import { API_TAG, OS_NAME } from "../../machinery/version.js";
import { CLUSTER_NS, IdentityType } from "../../machinery/resources/types/cluster.js";
import { AffiliateType, DiscoveryConfigType, type AffiliateSpec } from "../../machinery/resources/types/discovery.js";
import { APISERVER_ID, APIServerConfigType } from "../../machinery/resources/types/k8s-controlplane.js";
import { NodenameType } from "../../machinery/resources/types/k8s.js";
import { isControlPlane, machineType, machineTypeInput } from "../../machinery/resources/types/config.js";
import { fqdn, HOSTNAME_ID, HostnameStatusType, NETWORK_NS, NODE_ADDRESS, NodeAddressType, nodeAddressIPs } from "../../machinery/resources/types/network.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";
import type { Controller } from "../../state/runtime/index.js";
import { announces, DISCOVERY_CONFIG_ID } from "./discovery-config.js";

export interface LocalAffiliateOptions {
  /** Addresses used while the network controllers publish no NodeAddresses (plain local mode); default: wait. */
  fallbackAddresses?: () => string[];
  /** The OS name and tag announced (default this build's). */
  os?: { name: string; tag: string };
}

export function localAffiliateController(opts: LocalAffiliateOptions = {}): Controller {
  const os = opts.os ?? { name: OS_NAME, tag: API_TAG };
  return {
    name: "cluster.LocalAffiliateController",
    inputs: [
      { ...pointer(DiscoveryConfigType, DISCOVERY_CONFIG_ID), kind: "weak" },
      { ...pointer(IdentityType, "local"), kind: "weak" },
      { ...pointer(HostnameStatusType, HOSTNAME_ID), kind: "weak" },
      { ...pointer(NodenameType, "nodename"), kind: "weak" },
      { namespace: NETWORK_NS, type: NodeAddressType.type, kind: "weak" },
      machineTypeInput,
      { ...pointer(APIServerConfigType, APISERVER_ID), kind: "weak" },
    ],
    outputs: [{ type: AffiliateType.type, kind: "shared" }],
    reconcile(ctx) {
      const keep: string[] = [];
      const discovery = readSpec(ctx, DiscoveryConfigType, DISCOVERY_CONFIG_ID);
      const nodeId = readSpec(ctx, IdentityType, "local")?.nodeId;
      const nodename = readSpec(ctx, NodenameType, "nodename")?.nodename;
      const hostname = readSpec(ctx, HostnameStatusType, HOSTNAME_ID);
      const mt = machineType(ctx);
      const routed = readSpec(ctx, NodeAddressType, NODE_ADDRESS.routedNoK8s);
      const addresses = routed ? nodeAddressIPs(routed) : opts.fallbackAddresses?.();
      // Upstream waits for every mandatory input; a node name stands in for a hostname the network has not set.
      if (announces(discovery) && nodeId && nodename && mt && addresses) {
        const apiServer = readSpec(ctx, APIServerConfigType, APISERVER_ID);
        const spec: AffiliateSpec = {
          nodeId,
          addresses,
          hostname: hostname ? fqdn(hostname) : nodename,
          nodename,
          operatingSystem: `${os.name} (${os.tag})`,
          machineType: mt,
          ...(isControlPlane(mt) && apiServer ? { controlPlane: { port: apiServer.localPort } } : {}),
        };
        ctx.apply({ namespace: CLUSTER_NS, type: AffiliateType.type, id: nodeId, spec });
        keep.push(nodeId);
      }
      ctx.cleanup(CLUSTER_NS, AffiliateType.type, keep);
    },
  };
}
