/**
 * network.RouteSpecController (only when machined owns the network): installs the RouteSpecs' routes
 * the kernel lacks (`ip route replace`) and removes the ones it manages once their spec is gone. A route
 * whose gateway is not reachable yet (its address not added yet) is retried.
 */
import type { Controller } from "../../state/runtime/index.js";
import { removeRoute, replaceRoute, type NetTarget, type RouteArgs } from "../../host/net/apply.js";
import { AddressStatusType, LinkStatusType, RouteSpecType, RouteStatusType, type RouteSpecSpec } from "../../machinery/resources/types/network.js";
import { readAll } from "../../machinery/resources/read.js";
import { bumpRefresh, refreshOutput } from "./refresh.js";
import { NETWORK_NS, type NetworkEnv } from "./shared.js";

export function routeArgs(s: RouteSpecSpec): RouteArgs {
  return {
    family: s.family === "inet6" ? "inet6" : "inet4",
    dst: s.dst,
    gateway: s.gateway,
    src: s.src,
    outLinkName: s.outLinkName,
    table: s.table,
    priority: s.priority ?? 0,
    scope: s.scope,
    type: s.type,
    protocol: s.protocol,
    mtu: s.mtu,
  };
}

export function routeSpecController(env: NetworkEnv & { target: NetTarget }): Controller {
  const t = env.target;
  const owned = new Map<string, RouteSpecSpec>();
  return {
    name: "network.RouteSpecController",
    inputs: [
      { namespace: NETWORK_NS, type: RouteSpecType.type, kind: "strong" },
      { namespace: NETWORK_NS, type: RouteStatusType.type, kind: "weak" },
      { namespace: NETWORK_NS, type: AddressStatusType.type, kind: "weak" },
      { namespace: NETWORK_NS, type: LinkStatusType.type, kind: "weak" },
    ],
    outputs: [refreshOutput],
    async reconcile(ctx) {
      const links = new Set(ctx.list(NETWORK_NS, LinkStatusType.type).map((r) => r.metadata.id));
      const present = new Set(ctx.list(NETWORK_NS, RouteStatusType.type).map((r) => r.metadata.id));
      const specs = readAll(ctx, RouteSpecType);
      let changed = false;
      let pending = false;

      const wanted = new Set(specs.map((r) => r.metadata.id));
      for (const [id, spec] of [...owned]) {
        if (wanted.has(id)) continue;
        try {
          await removeRoute(t, routeArgs(spec));
          owned.delete(id);
          changed = true;
          ctx.log("removed route", { id });
        } catch (err) {
          pending = true;
          ctx.log("removing route failed", { id, error: String(err) });
        }
      }

      for (const r of specs) {
        const spec = r.spec;
        if (spec.outLinkName && !links.has(spec.outLinkName)) continue;
        owned.set(r.metadata.id, spec);
        if (present.has(r.metadata.id)) continue;
        try {
          await replaceRoute(t, routeArgs(spec));
          changed = true;
          ctx.log("installed route", { id: r.metadata.id });
        } catch (err) {
          pending = true;
          ctx.log("installing route failed", { id: r.metadata.id, error: String(err) });
        }
      }
      if (changed) bumpRefresh(ctx, "route");
      return pending ? { requeueAfterMs: env.retryMs } : undefined;
    },
  };
}
