/**
 * k8s.ControlPlaneExtraManifestsController: the user's manifests (CNI and cloud provider URLs,
 * `cluster.extraManifests`, `cluster.inlineManifests`) as ExtraManifestsConfig `controlplane`/`extra-manifests`.
 */
import { extraManifestsConfigSpec } from "../../machinery/kubernetes/manifests-config.js";
import { pointer } from "../../machinery/resources/read.js";
import { isControlPlane, machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { EXTRA_MANIFESTS_CONFIG_ID, ExtraManifestsConfigType } from "../../machinery/resources/types/k8s-manifests.js";
import type { Controller } from "../../state/runtime/index.js";

export function controlPlaneExtraManifestsController(): Controller {
  const ptr = pointer(ExtraManifestsConfigType, EXTRA_MANIFESTS_CONFIG_ID);
  return {
    name: "k8s.ControlPlaneExtraManifestsController",
    inputs: [machineConfigInput],
    outputs: [{ type: ExtraManifestsConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!cfg?.v1alpha1() || !isControlPlane(cfg.machineType())) {
        ctx.destroy(ptr);
        return;
      }
      ctx.apply({ ...ptr, spec: extraManifestsConfigSpec(cfg) });
    },
  };
}
