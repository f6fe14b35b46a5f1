/**
 * cluster.LocalAffiliateController: the Affiliate this node announces (`cluster`/<node id>) while discovery is
 * enabled, built from the same facts as its Member (cluster/member.ts: addresses, FQDN, machine type, OS, API
 * server port) plus the node name. Without discovery there is no local affiliate, as upstream.
 */
import { CLUSTER_NS, IdentityType, MemberType, type IdentitySpec, type MemberSpec } from "../../machinery/resources/types/cluster.js";
import { AffiliateType, DiscoveryConfigType, type AffiliateSpec, type DiscoveryConfigSpec } from "../../machinery/resources/types/discovery.js";
import { K8S_NS, NodenameType, type NodenameSpec } from "../../machinery/resources/types/k8s.js";
import type { Controller } from "../../state/runtime/index.js";
import { DISCOVERY_CONFIG_ID } from "./discovery-config.js";

export function localAffiliateController(): Controller {
  return {
    name: "cluster.LocalAffiliateController",
    inputs: [
      { namespace: "config", type: DiscoveryConfigType.type, id: DISCOVERY_CONFIG_ID, kind: "weak" },
      { namespace: CLUSTER_NS, type: IdentityType.type, id: "local", kind: "weak" },
      { namespace: K8S_NS, type: NodenameType.type, id: "nodename", kind: "weak" },
      { namespace: CLUSTER_NS, type: MemberType.type, kind: "weak" },
    ],
    outputs: [{ type: AffiliateType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const discovery = ctx.get({ namespace: "config", type: DiscoveryConfigType.type, id: DISCOVERY_CONFIG_ID })?.spec as DiscoveryConfigSpec | undefined;
      const identity = ctx.get({ namespace: CLUSTER_NS, type: IdentityType.type, id: "local" })?.spec as IdentitySpec | undefined;
      const nodename = (ctx.get({ namespace: K8S_NS, type: NodenameType.type, id: "nodename" })?.spec as NodenameSpec | undefined)?.nodename;
      const member = nodename ? (ctx.get({ namespace: CLUSTER_NS, type: MemberType.type, id: nodename })?.spec as MemberSpec | undefined) : undefined;
      const keep: string[] = [];
      if (discovery?.discoveryEnabled && identity?.nodeId && member) {
        const spec: AffiliateSpec = {
          nodeId: identity.nodeId,
          addresses: member.addresses,
          hostname: member.hostname,
          nodename,
          operatingSystem: member.operatingSystem,
          machineType: member.machineType,
          ...(member.controlPlane ? { controlPlane: member.controlPlane } : {}),
        };
        ctx.apply({ namespace: CLUSTER_NS, type: AffiliateType.type, id: identity.nodeId, spec });
        keep.push(identity.nodeId);
      }
      ctx.cleanup(CLUSTER_NS, AffiliateType.type, keep);
    },
  };
}
