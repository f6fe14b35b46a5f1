/** network.AddressStatusController: mirrors the kernel's addresses into AddressStatus resources (woken by the kernel's change notifications, see link-status.ts). */
import type { Controller } from "../../state/runtime/index.js";
import { AddressStatusType, LinkRefreshType } from "../../machinery/resources/types/network.js";
import { mirror, NETWORK_NS, type NetworkEnv } from "./shared.js";

export function addressStatusController(env: NetworkEnv): Controller {
  return {
    name: "network.AddressStatusController",
    inputs: [{ namespace: NETWORK_NS, type: LinkRefreshType.type, kind: "weak" }],
    outputs: [{ type: AddressStatusType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      mirror(ctx, AddressStatusType.type, await env.observe.addresses());
    },
    wakeups: (wake) => env.observe.watch("addresses", wake),
  };
}
