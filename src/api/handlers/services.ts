/** `talosctl service`: list the supervisor's services and start/stop/restart one (upstream APIStart/APIStop/APIRestart). */
import type { ServiceRestartRequest, ServiceStartRequest, ServiceStopRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import { ApiError, Code } from "../../machinery/errors.js";
import { toServiceInfo, type Supervisor } from "../../supervisor/index.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";
import { one } from "../reply.js";

export function serviceHandlers(deps: ApiDeps): Handlers {
  // Same text as the supervisor's for an unknown id, for nodes wired without services.
  const sup = (id: string): Supervisor => {
    const s = deps.services?.supervisor;
    if (!s) throw new ApiError(Code.Unknown, `service ${JSON.stringify(id)} not defined`);
    return s;
  };
  return {
    ServiceList: (_req, ctx: CallContext) => one(ctx, { services: (deps.services?.supervisor.list() ?? []).map(toServiceInfo) }),

    ServiceStart: async (req: ServiceStartRequest, ctx: CallContext) => {
      await sup(req.id).apiStart(req.id);
      return one(ctx, { resp: `Service ${JSON.stringify(req.id)} started` });
    },
    ServiceStop: async (req: ServiceStopRequest, ctx: CallContext) => {
      await sup(req.id).apiStop(req.id);
      return one(ctx, { resp: `Service ${JSON.stringify(req.id)} stopped` });
    },
    ServiceRestart: async (req: ServiceRestartRequest, ctx: CallContext) => {
      await sup(req.id).apiRestart(req.id);
      return one(ctx, { resp: `Service ${JSON.stringify(req.id)} restarted` });
    },
  };
}
