/** runtime.KernelParamConfigController: machine.sysctls of the config as KernelParamSpecs (they win over defaults). */
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { KernelParamSpecType, kernelParamId } from "../../machinery/resources/types/kernel.js";
import type { Controller } from "../../state/runtime/index.js";

export function kernelParamConfigController(): Controller {
  return {
    name: "runtime.KernelParamConfigController",
    inputs: [machineConfigInput],
    outputs: [{ type: KernelParamSpecType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const sysctls = machineConfig(ctx)?.machine?.sysctls ?? {};
      const keep: string[] = [];
      for (const [key, value] of Object.entries(sysctls)) {
        const id = kernelParamId(key);
        ctx.apply({ namespace: "runtime", type: KernelParamSpecType.type, id, spec: { value: String(value), ignoreErrors: false } });
        keep.push(id);
      }
      ctx.cleanup("runtime", KernelParamSpecType.type, keep);
    },
  };
}
