/**
 * k8s.NodeLabelSpecController: the labels this node wants on its Node, one NodeLabelSpec per key —
 * machine.nodeLabels, plus `node-role.kubernetes.io/control-plane: ""` on control planes (upstream sets it here
 * rather than through the kubelet, whose NodeRestriction forbids node-role labels). Upstream also labels the node
 * with its system extensions (`extensions.talos.dev/<name>: <version>`); this OS has no extensions, so none.
 */
import { LABEL_NODE_ROLE_CONTROL_PLANE } from "../../machinery/kubernetes/objects.js";
import { isControlPlane, machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { K8S_NS, NodeLabelSpecType } from "../../machinery/resources/types/k8s.js";
import type { Controller } from "../../state/runtime/index.js";

export function nodeLabelSpecController(): Controller {
  return {
    name: "k8s.NodeLabelSpecController",
    inputs: [machineConfigInput],
    outputs: [{ type: NodeLabelSpecType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      const labels: Record<string, string> = {};
      if (cfg?.machine) {
        Object.assign(labels, cfg.machine.nodeLabels ?? {});
        if (isControlPlane(cfg.machineType())) labels[LABEL_NODE_ROLE_CONTROL_PLANE] = "";
      }
      for (const [key, value] of Object.entries(labels)) ctx.apply({ namespace: K8S_NS, type: NodeLabelSpecType.type, id: key, spec: { key, value } });
      ctx.cleanup(K8S_NS, NodeLabelSpecType.type, Object.keys(labels));
    },
  };
}
