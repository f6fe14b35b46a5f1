/**
 * k8s.ControlPlaneControllerManagerController (control planes): ControllerManagerConfigs `kube-controller-manager`: enabled (machine.controlPlane.controllerManager.disabled), image, pod and service CIDRs, extra args/volumes/env, resources.
 * Destroyed when the node is not a control plane or has no cluster config.
 */
import { controllerManagerConfigSpec } from "../../machinery/kubernetes/control-plane-config.js";
import { hasClusterAndMachine } from "../../machinery/kubernetes/roots.js";
import { pointer } from "../../machinery/resources/read.js";
import { isControlPlane, machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { CONTROLLER_MANAGER_ID, ControllerManagerConfigType } from "../../machinery/resources/types/k8s-controlplane.js";
import type { Controller } from "../../state/runtime/index.js";

export function controlPlaneControllerManagerController(): Controller {
  const ptr = pointer(ControllerManagerConfigType, CONTROLLER_MANAGER_ID);
  return {
    name: "k8s.ControlPlaneControllerManagerController",
    inputs: [machineConfigInput],
    outputs: [{ type: ControllerManagerConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!hasClusterAndMachine(cfg) || !isControlPlane(cfg.machineType())) {
        ctx.destroy(ptr);
        return;
      }
      ctx.apply({ ...ptr, spec: controllerManagerConfigSpec(cfg) });
    },
  };
}
