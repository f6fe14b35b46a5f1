/**
 * k8s.NodeTaintSpecController: the taints this node wants on its Node, one NodeTaintSpec per key —
 * `node-role.kubernetes.io/control-plane:NoSchedule` on a control plane unless cluster.allowSchedulingOnControlPlanes,
 * then machine.nodeTaints (`key: value:Effect` or `key: Effect`; a config taint on the same key wins).
 */
import { LABEL_NODE_ROLE_CONTROL_PLANE } from "../../machinery/kubernetes/objects.js";
import { parseNodeTaint } from "../../machinery/kubernetes/node-apply.js";
import { isControlPlane, machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { K8S_NS, NodeTaintSpecType, type NodeTaintSpecSpec } from "../../machinery/resources/types/k8s.js";
import type { Controller } from "../../state/runtime/index.js";

export function nodeTaintSpecController(): Controller {
  return {
    name: "k8s.NodeTaintSpecController",
    inputs: [machineConfigInput],
    outputs: [{ type: NodeTaintSpecType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      const taints = new Map<string, NodeTaintSpecSpec>();
      if (cfg?.machine) {
        const c = cfg.cluster;
        const schedule = c?.allowSchedulingOnControlPlanes ?? c?.allowSchedulingOnMasters ?? false;
        if (c && isControlPlane(cfg.machineType()) && !schedule) {
          taints.set(LABEL_NODE_ROLE_CONTROL_PLANE, { key: LABEL_NODE_ROLE_CONTROL_PLANE, value: "", effect: "NoSchedule" });
        }
        for (const [key, text] of Object.entries(cfg.machine.nodeTaints ?? {})) taints.set(key, { key, ...parseNodeTaint(text) });
      }
      for (const [key, spec] of taints) ctx.apply({ namespace: K8S_NS, type: NodeTaintSpecType.type, id: key, spec });
      ctx.cleanup(K8S_NS, NodeTaintSpecType.type, taints.keys());
    },
  };
}
