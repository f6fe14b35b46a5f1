/**
 * k8s.NodeIPConfigController: NodeIPConfigs `k8s`/`kubelet`, the subnets the kubelet's node IP may and may not
 * come from, while the config has both a machine and a cluster section.
 */
import { pointer } from "../../machinery/resources/read.js";
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { NODE_IP_ID, NodeIPConfigType } from "../../machinery/resources/types/k8s-status.js";
import { nodeIPConfigSpec } from "../../machinery/kubernetes/node-ip.js";
import type { Controller } from "../../state/runtime/index.js";

export function nodeIPConfigController(): Controller {
  const ptr = pointer(NodeIPConfigType, NODE_IP_ID);
  return {
    name: "k8s.NodeIPConfigController",
    inputs: [machineConfigInput],
    outputs: [{ type: NodeIPConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!cfg?.machine || !cfg.cluster) {
        ctx.destroy(ptr);
        return;
      }
      ctx.apply({ ...ptr, spec: nodeIPConfigSpec(cfg) });
    },
  };
}
