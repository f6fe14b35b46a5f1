/** MachineService Upgrade (legacy path: ack + actor id, then the upgrade sequence) and Rollback (one step back). */
import { randomUUID } from "node:crypto";
import type { UpgradeRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";
import { one } from "../reply.js";
import { installManager } from "./images.js";

export function upgradeHandlers(deps: ApiDeps): Handlers {
  return {
    Upgrade: async (req: UpgradeRequest, ctx: CallContext) => {
      const actorId = randomUUID();
      deps.log.info({ actorId, image: req.image, stage: req.stage, force: req.force }, "upgrade request received");
      await installManager(deps).upgradeLegacy({ image: req.image, stage: req.stage, force: req.force, preserve: req.preserve }, actorId);
      return one(ctx, { ack: "Upgrade request received", actorId });
    },
    Rollback: async (_req, ctx: CallContext) => {
      deps.log.info("rollback via API received");
      await installManager(deps).rollback(randomUUID());
      return one(ctx, {});
    },
  };
}
