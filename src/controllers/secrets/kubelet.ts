/**
 * secrets.KubeletController (every node with a config): KubeletSecrets `kubelet` — the endpoint the kubelet
 * bootstraps against, the bootstrap token and the Kubernetes CAs it trusts (machinery/kubernetes/roots.ts).
 */
import { hasClusterAndMachine, kubeletSecrets } from "../../machinery/kubernetes/roots.js";
import { pointer } from "../../machinery/resources/read.js";
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { KubeletSecretsType, SECRET_IDS } from "../../machinery/resources/types/secrets.js";
import type { Controller } from "../../state/runtime/index.js";

export function kubeletSecretsController(): Controller {
  const ptr = pointer(KubeletSecretsType, SECRET_IDS.kubelet);
  return {
    name: "secrets.KubeletController",
    inputs: [machineConfigInput],
    outputs: [{ type: KubeletSecretsType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!hasClusterAndMachine(cfg)) {
        ctx.destroy(ptr);
        return;
      }
      ctx.apply({ ...ptr, spec: kubeletSecrets(cfg) });
    },
  };
}
