/**
 * k8s.KubePrismConfigController: KubePrismConfigs `k8s`/`k8s-loadbalancer-config`, where KubePrism listens
 * (127.0.0.1:<port>, 7445 by default) and what it balances (the KubePrismEndpoints), while the config enables it.
 */
import { kubePrismSettings } from "../../machinery/kubernetes/kubeprism.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { KUBEPRISM_CONFIG_ID, KUBEPRISM_ENDPOINTS_ID, KubePrismConfigType, KubePrismEndpointsType } from "../../machinery/resources/types/k8s-status.js";
import type { Controller } from "../../state/runtime/index.js";

export function kubePrismConfigController(): Controller {
  const ptr = pointer(KubePrismConfigType, KUBEPRISM_CONFIG_ID);
  return {
    name: "k8s.KubePrismConfigController",
    inputs: [machineConfigInput, { ...pointer(KubePrismEndpointsType, KUBEPRISM_ENDPOINTS_ID), kind: "weak" }],
    outputs: [{ type: KubePrismConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      const settings = cfg?.machine ? kubePrismSettings(cfg) : undefined;
      if (!settings?.enabled) {
        ctx.destroy(ptr);
        return;
      }
      // Upstream skips (keeps what it had) until the endpoints exist.
      const endpoints = readSpec(ctx, KubePrismEndpointsType, KUBEPRISM_ENDPOINTS_ID);
      if (!endpoints) return;
      ctx.apply({ ...ptr, spec: { host: "127.0.0.1", port: settings.port, endpoints: endpoints.endpoints } });
    },
  };
}
