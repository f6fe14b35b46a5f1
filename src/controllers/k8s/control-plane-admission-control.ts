/**
 * k8s.ControlPlaneAdmissionControlController (control planes): AdmissionControlConfigs `admission-control`: the plugins of cluster.apiServer.admissionControl with their configuration.
 * Destroyed when the node is not a control plane or has no cluster config.
 */
import { admissionControlConfigSpec } from "../../machinery/kubernetes/control-plane-config.js";
import { hasClusterAndMachine } from "../../machinery/kubernetes/roots.js";
import { pointer } from "../../machinery/resources/read.js";
import { isControlPlane, machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { ADMISSION_CONTROL_ID, AdmissionControlConfigType } from "../../machinery/resources/types/k8s-controlplane.js";
import type { Controller } from "../../state/runtime/index.js";

export function controlPlaneAdmissionControlController(): Controller {
  const ptr = pointer(AdmissionControlConfigType, ADMISSION_CONTROL_ID);
  return {
    name: "k8s.ControlPlaneAdmissionControlController",
    inputs: [machineConfigInput],
    outputs: [{ type: AdmissionControlConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!hasClusterAndMachine(cfg) || !isControlPlane(cfg.machineType())) {
        ctx.destroy(ptr);
        return;
      }
      ctx.apply({ ...ptr, spec: admissionControlConfigSpec(cfg) });
    },
  };
}
