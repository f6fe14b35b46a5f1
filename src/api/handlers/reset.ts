/** MachineService/Reset: validated synchronously, then the reset sequence runs under the returned actor id. */
import { randomUUID } from "node:crypto";
import type { ResetRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";
import { one } from "../reply.js";
import { installManager } from "./images.js";

export function resetHandlers(deps: ApiDeps): Handlers {
  return {
    Reset: async (req: ResetRequest, ctx: CallContext) => {
      const actorId = randomUUID();
      deps.log.info({ actorId, graceful: req.graceful, reboot: req.reboot, mode: req.mode }, "reset request received");
      await installManager(deps).reset(
        {
          graceful: req.graceful,
          reboot: req.reboot,
          mode: req.mode,
          systemPartitionsToWipe: req.systemPartitionsToWipe.map((p) => ({ label: p.label, wipe: p.wipe })),
          userDisksToWipe: req.userDisksToWipe,
        },
        actorId,
      );
      return one(ctx, { actorId });
    },
  };
}
