/**
 * network.HostnameSpecController: HostnameSpec → kernel → HostnameStatus.
 *
 * - PID 1: sets the kernel host/domain name, then reports what the kernel has.
 * - A given network namespace: the hostname lives in the UTS namespace, which a network namespace
 *   shares with the host, so it is NOT applied; the status reports the spec (documented limitation).
 * - Observe only (local mode): the kernel's hostname is never changed; the node's hostname is the
 *   merged spec (the configured name, or the kernel's when none is configured), so the chain
 *   MachineConfig → HostnameSpec → HostnameStatus → Nodename reads back what the operator applied.
 */
import type { Controller } from "../../state/runtime/index.js";
import { setHostname } from "../../host/net/apply.js";
import { HostnameSpecType, HostnameStatusType, type HostnameStatusSpec } from "../../machinery/resources/types/network.js";
import { readSpec } from "../../machinery/resources/read.js";
import { HOSTNAME_ID } from "./hostname-merge.js";
import { NETWORK_NS, type NetworkEnv } from "./shared.js";

export function hostnameSpecController(env: NetworkEnv): Controller {
  const target = env.target;
  return {
    name: "network.HostnameSpecController",
    inputs: [{ namespace: NETWORK_NS, type: HostnameSpecType.type, id: HOSTNAME_ID, kind: "strong" }],
    outputs: [{ type: HostnameStatusType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const ptr = { namespace: NETWORK_NS, type: HostnameStatusType.type, id: HOSTNAME_ID };
      const spec = readSpec(ctx, HostnameSpecType, HOSTNAME_ID);
      const configured = spec !== undefined && (target?.kind === "netns" || spec.layer === "configuration");
      if (target?.kind !== "pid1" && configured) {
        if (!spec) ctx.destroy(ptr);
        else ctx.apply({ ...ptr, spec: { hostname: spec.hostname, domainname: spec.domainname } satisfies HostnameStatusSpec });
        return;
      }
      if (target?.kind === "pid1" && spec?.hostname) {
        const now = (await env.observe.hostname()).spec;
        if (now.hostname !== spec.hostname || now.domainname !== spec.domainname) {
          ctx.log("setting hostname", { hostname: spec.hostname, domainname: spec.domainname });
          await setHostname(target, spec.hostname, spec.domainname);
        }
      }
      ctx.apply({ ...ptr, spec: (await env.observe.hostname()).spec });
    },
    // The kernel's name is reported (PID 1, or local mode without a configured one): follow its changes.
    wakeups: target?.kind === "netns" ? undefined : (wake) => env.observe.watch("hostname", wake),
  };
}
