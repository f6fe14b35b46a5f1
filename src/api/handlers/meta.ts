/** MachineService MetaWrite / MetaDelete on the system disk's META partition (talosctl meta write/delete). */
import type { MetaDeleteRequest, MetaWriteRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";
import { one } from "../reply.js";
import { installManager } from "./images.js";

export function metaHandlers(deps: ApiDeps): Handlers {
  return {
    MetaWrite: async (req: MetaWriteRequest, ctx: CallContext) => {
      await installManager(deps).metaWrite(req.key, req.value);
      return one(ctx, {});
    },
    MetaDelete: async (req: MetaDeleteRequest, ctx: CallContext) => {
      await installManager(deps).metaDelete(req.key);
      return one(ctx, {});
    },
  };
}
