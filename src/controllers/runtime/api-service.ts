/**
 * runtime.APIServiceController: lists `apid` on every configured node, as upstream does. The Talos API is served by
 * machined itself, so apid is an in-process service whose health check dials the API port (supervisor/services/apid.ts).
 */
import { machineType, machineTypeInput } from "../../machinery/resources/types/config.js";
import { ApidService, type ApiEndpoint } from "../../supervisor/services/apid.js";
import type { ServiceHost } from "../../supervisor/types.js";
import type { Controller } from "../../state/runtime/index.js";

export function apiServiceController(o: { services: ServiceHost; endpoint: () => ApiEndpoint | undefined }): Controller {
  return {
    name: "runtime.APIServiceController",
    inputs: [machineTypeInput],
    outputs: [],
    async reconcile(ctx) {
      const t = machineType(ctx);
      if (!t || t === "unknown") await o.services.remove("apid");
      else await o.services.ensure(new ApidService(o.endpoint), "apid");
    },
  };
}
