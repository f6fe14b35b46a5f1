/** Reboot and Shutdown: start the sequence and answer with its actor id (trackers follow the events). */
import { randomUUID } from "node:crypto";
import type { Handlers } from "../transport/service.js";
import type { ApiDeps } from "../deps.js";
import { one } from "../reply.js";

export function powerHandlers(deps: ApiDeps): Handlers {
  return {
    Reboot: async (_req, ctx) => {
      const actorId = randomUUID();
      deps.log.info({ actorId }, "reboot via API received");
      deps.node.reboot(actorId);
      return one(ctx, { actorId });
    },
    Shutdown: async (_req, ctx) => {
      const actorId = randomUUID();
      deps.log.info({ actorId }, "shutdown via API received");
      deps.node.shutdown(actorId);
      return one(ctx, { actorId });
    },
  };
}
