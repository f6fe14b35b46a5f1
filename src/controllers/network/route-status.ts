/** network.RouteStatusController: mirrors the kernel's routes (all tables) into RouteStatus resources (woken by the kernel's change notifications, see link-status.ts). */
import type { Controller } from "../../state/runtime/index.js";
import { LinkRefreshType, RouteStatusType } from "../../machinery/resources/types/network.js";
import { mirror, NETWORK_NS, type NetworkEnv } from "./shared.js";

export function routeStatusController(env: NetworkEnv): Controller {
  return {
    name: "network.RouteStatusController",
    inputs: [{ namespace: NETWORK_NS, type: LinkRefreshType.type, kind: "weak" }],
    outputs: [{ type: RouteStatusType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      mirror(ctx, RouteStatusType.type, await env.observe.routes());
    },
    wakeups: (wake) => env.observe.watch("routes", wake),
  };
}
