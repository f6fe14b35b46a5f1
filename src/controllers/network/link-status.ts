/**
 * network.LinkStatusController: mirrors the kernel's links into LinkStatus resources. It looks again when
 * the kernel announces a link change (rtnetlink RTNLGRP_LINK) and when an apply controller bumps a
 * LinkRefresh after changing the kernel; nothing runs while the links stay as they are.
 */
import type { Controller } from "../../state/runtime/index.js";
import { LinkRefreshType, LinkStatusType } from "../../machinery/resources/types/network.js";
import { mirror, NETWORK_NS, type NetworkEnv } from "./shared.js";

export function linkStatusController(env: NetworkEnv): Controller {
  return {
    name: "network.LinkStatusController",
    inputs: [{ namespace: NETWORK_NS, type: LinkRefreshType.type, kind: "weak" }],
    outputs: [{ type: LinkStatusType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      mirror(ctx, LinkStatusType.type, await env.observe.links());
    },
    wakeups: (wake) => env.observe.watch("links", wake),
  };
}
