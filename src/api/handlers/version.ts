/** Version: the semver tag talosctl gates on, platform, and RBAC once a config is loaded. */
import type { Handlers } from "../transport/service.js";
import type { ApiDeps } from "../deps.js";
import { buildInfo } from "../../machinery/version.js";
import { one } from "../reply.js";

export function versionHandlers(deps: ApiDeps): Handlers {
  return {
    Version: async (_req, ctx) =>
      one(ctx, {
        version: buildInfo(),
        platform: { name: deps.platform.name, mode: deps.platform.mode },
        features: deps.node.mode === "configured" ? { rbac: true } : undefined,
      }),
  };
}
