/**
 * cluster.MemberController: one Member (`cluster`/<node name>) for every Affiliate in `cluster` that has a node
 * name, the local one included, as upstream: the cluster as this node sees it. Without discovery there are no
 * affiliates, so no members.
 */
import { CLUSTER_NS, MemberType, type MemberSpec } from "../../machinery/resources/types/cluster.js";
import { AffiliateType } from "../../machinery/resources/types/discovery.js";
import { readAll } from "../../machinery/resources/read.js";
import type { Controller } from "../../state/runtime/index.js";

export function memberController(): Controller {
  return {
    name: "cluster.MemberController",
    inputs: [{ namespace: CLUSTER_NS, type: AffiliateType.type, kind: "weak" }],
    outputs: [{ type: MemberType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const keep: string[] = [];
      for (const { spec: a } of readAll(ctx, AffiliateType, CLUSTER_NS)) {
        if (!a.nodename) continue;
        const spec: MemberSpec = {
          nodeId: a.nodeId,
          addresses: [...a.addresses],
          hostname: a.hostname,
          machineType: a.machineType,
          operatingSystem: a.operatingSystem,
          ...(a.controlPlane ? { controlPlane: { ...a.controlPlane } } : {}),
        };
        ctx.apply({ namespace: CLUSTER_NS, type: MemberType.type, id: a.nodename, spec });
        keep.push(a.nodename);
      }
      ctx.cleanup(CLUSTER_NS, MemberType.type, keep);
    },
  };
}
