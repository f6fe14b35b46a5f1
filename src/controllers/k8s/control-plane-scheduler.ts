/**
 * k8s.ControlPlaneSchedulerController (control planes): SchedulerConfigs `kube-scheduler`: enabled (machine.controlPlane.scheduler.disabled), image, extra args/volumes/env, resources, cluster.scheduler.config.
 * Destroyed when the node is not a control plane or has no cluster config.
 */
import { schedulerConfigSpec } from "../../machinery/kubernetes/control-plane-config.js";
import { hasClusterAndMachine } from "../../machinery/kubernetes/roots.js";
import { pointer } from "../../machinery/resources/read.js";
import { isControlPlane, machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { SCHEDULER_ID, SchedulerConfigType } from "../../machinery/resources/types/k8s-controlplane.js";
import type { Controller } from "../../state/runtime/index.js";

export function controlPlaneSchedulerController(): Controller {
  const ptr = pointer(SchedulerConfigType, SCHEDULER_ID);
  return {
    name: "k8s.ControlPlaneSchedulerController",
    inputs: [machineConfigInput],
    outputs: [{ type: SchedulerConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!hasClusterAndMachine(cfg) || !isControlPlane(cfg.machineType())) {
        ctx.destroy(ptr);
        return;
      }
      ctx.apply({ ...ptr, spec: schedulerConfigSpec(cfg) });
    },
  };
}
