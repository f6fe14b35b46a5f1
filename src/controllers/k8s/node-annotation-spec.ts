/**
 * k8s.NodeAnnotationSpecController: the annotations this node wants on its Node, one NodeAnnotationSpec per key,
 * from machine.nodeAnnotations. (Upstream adds the system extensions whose versions are not valid label values;
 * this OS has no extensions.)
 */
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { K8S_NS, NodeAnnotationSpecType } from "../../machinery/resources/types/k8s.js";
import type { Controller } from "../../state/runtime/index.js";

export function nodeAnnotationSpecController(): Controller {
  return {
    name: "k8s.NodeAnnotationSpecController",
    inputs: [machineConfigInput],
    outputs: [{ type: NodeAnnotationSpecType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const annotations = { ...(machineConfig(ctx)?.machine?.nodeAnnotations ?? {}) };
      for (const [key, value] of Object.entries(annotations)) {
        ctx.apply({ namespace: K8S_NS, type: NodeAnnotationSpecType.type, id: key, spec: { key, value } });
      }
      ctx.cleanup(K8S_NS, NodeAnnotationSpecType.type, Object.keys(annotations));
    },
  };
}
