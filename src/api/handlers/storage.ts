/** storage.StorageService/Disks: discovered block devices plus the disk-image files local mode knows of. */
import { discoverDisks, storageDiskFields } from "../../host/disks.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";
import { one } from "../reply.js";

export function storageHandlers(deps: ApiDeps): Handlers {
  return {
    Disks: async (_req, ctx: CallContext) => {
      const disks = deps.install ? await deps.install.disks() : (await discoverDisks()).map((disk) => ({ disk, system: false }));
      return one(ctx, { disks: disks.map((d) => storageDiskFields(d.disk, d.system)) });
    },
  };
}
