/** ApplyConfiguration: a thin wrapper over the node's config applier. */
import type { ApplyConfigurationRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import { Role } from "../../machinery/role.js";
import type { Handlers } from "../transport/service.js";
import type { ApiDeps } from "../deps.js";
import { one } from "../reply.js";

export function applyHandlers(deps: ApiDeps): Handlers {
  return {
    ApplyConfiguration: async (req: ApplyConfigurationRequest, ctx) => {
      const d = req.tryModeTimeout;
      const tryTimeoutMs = d ? Number(d.seconds) * 1000 + Math.floor(d.nanos / 1e6) : undefined;
      const res = await deps.node.applier.apply({
        data: req.data,
        mode: req.mode,
        dryRun: req.dryRun,
        tryTimeoutMs,
        isAdmin: ctx.roles.has(Role.Admin),
      });
      return one(ctx, { mode: res.mode, modeDetails: res.modeDetails, warnings: res.warnings });
    },
  };
}
