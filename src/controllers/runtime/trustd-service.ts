/**
 * runtime.TrustdServiceController: runs `trustd` on control planes only, as upstream's sequencer loads it for
 * init/controlplane machines. The service (and the server it runs) is built by the wiring and handed in; a worker
 * or an unconfigured node has no trustd.
 */
import { isControlPlane, machineType, machineTypeInput } from "../../machinery/resources/types/config.js";
import type { TrustdService } from "../../supervisor/services/trustd.js";
import type { ServiceHost } from "../../supervisor/types.js";
import type { Controller } from "../../state/runtime/index.js";

export function trustdServiceController(o: { services: ServiceHost; service: TrustdService }): Controller {
  return {
    name: "runtime.TrustdServiceController",
    inputs: [machineTypeInput],
    outputs: [],
    async reconcile(ctx) {
      if (isControlPlane(machineType(ctx))) await o.services.ensure(o.service, "trustd");
      else await o.services.remove("trustd");
    },
  };
}
