/** cluster.InfoController: cluster id and name from the machine config (`cluster`/`current`). */
import { CLUSTER_NS, InfoType } from "../../machinery/resources/types/cluster.js";
import type { Controller } from "../../state/runtime/index.js";
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";

export function infoController(): Controller {
  const ptr = { namespace: CLUSTER_NS, type: InfoType.type, id: "current" };
  return {
    name: "cluster.InfoController",
    inputs: [machineConfigInput],
    outputs: [{ type: InfoType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cluster = machineConfig(ctx)?.cluster;
      // Upstream publishes Info only when the config carries a cluster identity (id or secret).
      if (!cluster || (!cluster.id && !cluster.secret)) {
        ctx.destroy(ptr);
        return;
      }
      ctx.apply({ ...ptr, spec: { clusterId: cluster.id ?? "", clusterName: cluster.clusterName ?? "" } });
    },
  };
}
