/**
 * cluster.MemberController: the cluster as this node sees it. Without a discovery service a single
 * node only knows itself, so this publishes one Member (id = node name, as upstream) built the way
 * Talos builds its local affiliate: identity, FQDN hostname, machine type, `<OS> (<tag>)`, routed
 * addresses without Kubernetes ones, and the API server port on control planes.
 */
import { API_TAG, OS_NAME } from "../../machinery/version.js";
import { CLUSTER_NS, IdentityType, MemberType, type MemberSpec } from "../../machinery/resources/types/cluster.js";
import { K8S_NS, NodenameType, type NodenameSpec } from "../../machinery/resources/types/k8s.js";
import { RUNTIME_NS, VersionType, type VersionSpec } from "../../machinery/resources/types/runtime.js";
import type { Controller, ReconcileContext } from "../../state/runtime/index.js";
import { isControlPlane, machineConfig, machineConfigInput, machineType, machineTypeInput } from "../../machinery/resources/types/config.js";
import { apiServerPort } from "../../machinery/kubernetes/control-plane-args.js";
import { fqdn, HOSTNAME_ID, HostnameStatusType, NETWORK_NS, NODE_ADDRESS, NodeAddressType, nodeAddressIPs } from "../../machinery/resources/types/network.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";

export interface MemberOptions {
  /** Addresses used until the network controllers publish NodeAddresses (default: none). */
  fallbackAddresses?: () => string[];
}

export function memberController(opts: MemberOptions = {}): Controller {
  const fallback = opts.fallbackAddresses ?? (() => []);
  return {
    name: "cluster.MemberController",
    inputs: [
      { namespace: CLUSTER_NS, type: IdentityType.type, id: "local", kind: "weak" },
      { namespace: K8S_NS, type: NodenameType.type, id: "nodename", kind: "weak" },
      { ...pointer(HostnameStatusType, HOSTNAME_ID), kind: "weak" },
      { namespace: NETWORK_NS, type: NodeAddressType.type, kind: "weak" },
      { namespace: RUNTIME_NS, type: VersionType.type, id: "version", kind: "weak" },
      machineTypeInput,
      machineConfigInput,
    ],
    outputs: [{ type: MemberType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const nodename = ctx.get({ namespace: K8S_NS, type: NodenameType.type, id: "nodename" })?.spec as NodenameSpec | undefined;
      const mt = machineType(ctx);
      const keep: string[] = [];
      if (nodename && mt) {
        const hs = readSpec(ctx, HostnameStatusType, HOSTNAME_ID);
        const version = ctx.get({ namespace: RUNTIME_NS, type: VersionType.type, id: "version" })?.spec as VersionSpec | undefined;
        const cfg = machineConfig(ctx);
        const spec: MemberSpec = {
          nodeId: (ctx.get({ namespace: CLUSTER_NS, type: IdentityType.type, id: "local" })?.spec as { nodeId?: string } | undefined)?.nodeId ?? "",
          addresses: addresses(ctx, fallback),
          hostname: hs ? fqdn(hs) : nodename.nodename,
          machineType: mt,
          operatingSystem: `${version?.name ?? OS_NAME} (${version?.version ?? API_TAG})`,
          ...(isControlPlane(mt) && cfg ? { controlPlane: { port: apiServerPort(cfg) } } : {}),
        };
        ctx.apply({ namespace: CLUSTER_NS, type: MemberType.type, id: nodename.nodename, spec });
        keep.push(nodename.nodename);
      }
      ctx.cleanup(CLUSTER_NS, MemberType.type, keep);
    },
  };
}

/** Routed addresses without Kubernetes ones, else current ones, else the fallback (prefix lengths dropped). */
function addresses(ctx: ReconcileContext, fallback: () => string[]): string[] {
  for (const id of [NODE_ADDRESS.routedNoK8s, NODE_ADDRESS.currentNoK8s]) {
    const ips = nodeAddressIPs(readSpec(ctx, NodeAddressType, id));
    if (ips.length > 0) return ips;
  }
  return fallback();
}
