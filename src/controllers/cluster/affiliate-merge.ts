/**
 * cluster.AffiliateMergeController: one Affiliate per node id in `cluster` from what the registries reported in
 * `cluster-raw` (`k8s/<id>`, `service/<id>`), merged as upstream (address lists united, later scalars win).
 * An id this node already announces as its own (LocalAffiliateController's) is left alone: two machines that
 * share one identity (a cloned STATE) must not overwrite this node's view of itself.
 */
import { mergeAffiliate } from "../../machinery/resources/types/cluster-affiliate.js";
import { CLUSTER_NS } from "../../machinery/resources/types/cluster.js";
import { AffiliateType, CLUSTER_RAW_NS, type AffiliateSpec } from "../../machinery/resources/types/discovery.js";
import { readAll } from "../../machinery/resources/read.js";
import type { Controller } from "../../state/runtime/index.js";

export const AFFILIATE_MERGE_CONTROLLER = "cluster.AffiliateMergeController";

export function affiliateMergeController(): Controller {
  return {
    name: AFFILIATE_MERGE_CONTROLLER,
    inputs: [
      { namespace: CLUSTER_RAW_NS, type: AffiliateType.type, kind: "weak" },
      // To notice when a local affiliate with a clashing id comes or goes.
      { namespace: CLUSTER_NS, type: AffiliateType.type, kind: "weak" },
    ],
    outputs: [{ type: AffiliateType.type, kind: "shared" }],
    reconcile(ctx) {
      const merged = new Map<string, AffiliateSpec>();
      // Sorted by raw id so the merge order (and so the result) does not depend on when each registry answered.
      const raw = readAll(ctx, AffiliateType, CLUSTER_RAW_NS).sort((a, b) => (a.metadata.id < b.metadata.id ? -1 : a.metadata.id > b.metadata.id ? 1 : 0));
      for (const r of raw) {
        const id = r.spec.nodeId;
        if (!id) continue;
        const prev = merged.get(id);
        merged.set(id, prev ? mergeAffiliate(prev, r.spec) : structuredClone(r.spec));
      }
      const keep: string[] = [];
      for (const [id, spec] of merged) {
        const existing = ctx.get({ namespace: CLUSTER_NS, type: AffiliateType.type, id });
        if (existing && existing.metadata.owner !== AFFILIATE_MERGE_CONTROLLER) {
          ctx.log("a registry reports an affiliate with this node's own id; ignored", { id, owner: existing.metadata.owner });
          continue;
        }
        ctx.apply({ namespace: CLUSTER_NS, type: AffiliateType.type, id, spec });
        keep.push(id);
      }
      ctx.cleanup(CLUSTER_NS, AffiliateType.type, keep);
    },
  };
}
