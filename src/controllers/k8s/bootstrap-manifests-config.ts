/**
 * k8s.ControlPlaneBootstrapManifestsController: what the bootstrap manifests are rendered from (API server for
 * in-cluster clients, DNS service addresses, pod CIDRs, kube-proxy, CoreDNS and flannel settings), as
 * BootstrapManifestsConfig `controlplane`/`manifests`. Control planes only: workers apply no manifests.
 */
import { bootstrapManifestsConfigSpec } from "../../machinery/kubernetes/manifests-config.js";
import { pointer } from "../../machinery/resources/read.js";
import { isControlPlane, machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { BOOTSTRAP_MANIFESTS_CONFIG_ID, BootstrapManifestsConfigType } from "../../machinery/resources/types/k8s-manifests.js";
import type { Controller } from "../../state/runtime/index.js";

export function controlPlaneBootstrapManifestsController(): Controller {
  const ptr = pointer(BootstrapManifestsConfigType, BOOTSTRAP_MANIFESTS_CONFIG_ID);
  return {
    name: "k8s.ControlPlaneBootstrapManifestsController",
    inputs: [machineConfigInput],
    outputs: [{ type: BootstrapManifestsConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!cfg?.v1alpha1() || !isControlPlane(cfg.machineType())) {
        ctx.destroy(ptr);
        return;
      }
      ctx.apply({ ...ptr, spec: bootstrapManifestsConfigSpec(cfg) });
    },
  };
}
