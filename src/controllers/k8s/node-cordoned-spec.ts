/**
 * k8s.NodeCordonedSpecController: NodeCordonedSpec `cordoned` exists while the machine is shutting down, upgrading
 * or resetting (so k8s.NodeApplyController cordons the Node), and is removed once it boots or runs again; other
 * stages (rebooting, installing, maintenance) leave it as it is, as upstream.
 */
import { pointer, readSpec } from "../../machinery/resources/read.js";
import { K8S_NS, NODE_CORDONED_ID, NodeCordonedSpecType } from "../../machinery/resources/types/k8s.js";
import { MachineStatusType, RUNTIME_NS, type StageName } from "../../machinery/resources/types/runtime.js";
import type { Controller } from "../../state/runtime/index.js";

const CORDON: StageName[] = ["shutting down", "upgrading", "resetting"];
const UNCORDON: StageName[] = ["booting", "running"];

export function nodeCordonedSpecController(): Controller {
  return {
    name: "k8s.NodeCordonedSpecController",
    inputs: [{ ...pointer(MachineStatusType, "machine", RUNTIME_NS), kind: "weak" }],
    outputs: [{ type: NodeCordonedSpecType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const stage = readSpec(ctx, MachineStatusType, "machine", RUNTIME_NS)?.stage;
      if (!stage) return;
      if (CORDON.includes(stage)) ctx.apply({ namespace: K8S_NS, type: NodeCordonedSpecType.type, id: NODE_CORDONED_ID, spec: {} });
      else if (UNCORDON.includes(stage)) ctx.cleanup(K8S_NS, NodeCordonedSpecType.type, []);
    },
  };
}
