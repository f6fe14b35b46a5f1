/**
 * runtime.ContainerdServiceController: runs containerd on every configured node (MachineType known), as upstream
 * starts it in every boot sequence past maintenance; it goes away with the config (reset).
 */
import { machineType, machineTypeInput } from "../../machinery/resources/types/config.js";
import { ContainerdService, type ContainerdServiceOptions } from "../../supervisor/index.js";
import type { Controller } from "../../state/runtime/index.js";
import type { ServiceHost } from "../../supervisor/types.js";

export interface ContainerdServiceControllerOptions {
  services: ServiceHost;
  service: ContainerdServiceOptions;
}

export function containerdServiceController(o: ContainerdServiceControllerOptions): Controller {
  return {
    name: "runtime.ContainerdServiceController",
    inputs: [machineTypeInput],
    outputs: [],
    async reconcile(ctx) {
      const t = machineType(ctx);
      if (!t || t === "unknown") await o.services.remove("containerd");
      else await o.services.ensure(new ContainerdService(o.service), "containerd");
    },
  };
}
