/** InspectService.ControllerRuntimeDependencies: the controller graph `talosctl inspect dependencies` draws. */
import { DependencyEdgeType } from "../../machinery/api/gen/inspect/inspect_pb.js";
import { ApiError, Code } from "../../machinery/errors.js";
import type { DependencyEdge } from "../../state/runtime/index.js";
import type { Handlers } from "../transport/service.js";
import type { ApiDeps } from "../deps.js";
import { one } from "../reply.js";

/** The part of ControllerRuntime this handler needs (ApiDeps gains `runtime` in the wiring). */
export interface GraphSource {
  dependencyGraph(): DependencyEdge[];
}

export function inspectHandlers(deps: ApiDeps & { runtime?: GraphSource }): Handlers {
  return {
    ControllerRuntimeDependencies: async (_req, ctx) => {
      if (!deps.runtime) throw new ApiError(Code.Unavailable, "controller runtime is not running");
      const edges = deps.runtime.dependencyGraph().map((e) => ({
        controllerName: e.controllerName,
        edgeType: DependencyEdgeType[e.edgeType],
        resourceNamespace: e.namespace,
        resourceType: e.type,
        resourceId: e.id ?? "",
      }));
      return one(ctx, { edges });
    },
  };
}
