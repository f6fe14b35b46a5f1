/**
 * Observed routes of every table (RTM_GETROUTE dumps, IPv4 and IPv6) → RouteStatus specs with upstream's
 * ids: `[<table>/ if not main][<link>/ if inet6]<family>/<gw>/<dst>/<priority>`.
 */
import { AF_INET, AF_INET6, RTM_F_CLONED, ipText, type NlLink, type NlRoute } from "./netlink.js";
import { familyName, routeFlagsText, routeProtocolName, routeTypeName, routingTableName, scopeName } from "./names.js";
import { withDumps } from "./rtnl.js";
import type { NetnsOptions } from "./links.js";
import type { Observed, RouteNextHopSpec, RouteStatusSpec } from "./types.js";

export function routeId(r: Pick<RouteStatusSpec, "table" | "family" | "dst" | "gateway" | "priority" | "outLinkName">): string {
  let prefix = r.table === "main" ? "" : `${r.table}/`;
  if (r.family === "inet6") prefix += `${r.outLinkName ?? ""}/`;
  return `${prefix}${r.family}/${r.gateway}/${r.dst}/${r.priority}`;
}

/** A link name for an index; an index we cannot resolve prints as iproute2 does, `if<N>`. */
const nameOf = (names: Map<number, string>, index: number) => names.get(index) ?? `if${index}`;

/** One family's dump; `links` (same namespace) give the device names. */
export function routeSpecs(routes: NlRoute[], links: NlLink[]): Array<Observed<RouteStatusSpec>> {
  const names = new Map(links.map((l) => [l.index, l.name]));
  const out = new Map<string, Observed<RouteStatusSpec>>();
  for (const r of routes) {
    if (r.family !== AF_INET && r.family !== AF_INET6) continue;
    // Cached/exception routes are not part of the routing table (iproute2 hides them too).
    if (r.flags & RTM_F_CLONED) continue;
    const nextHops: RouteNextHopSpec[] = r.nextHops.map((nh) => ({
      gateway: nh.gateway ? ipText(nh.gateway) : "",
      ...(nh.index ? { outLinkName: nameOf(names, nh.index) } : {}),
      weight: nh.hops + 1,
    }));
    const outLinkName = r.oif ? nameOf(names, r.oif) : undefined;
    const spec: RouteStatusSpec = {
      family: familyName(r.family),
      // Upstream renders a missing destination (a default route) as "" (an invalid netip.Prefix).
      dst: r.dst ? `${ipText(r.dst)}/${r.dstLen}` : "",
      src: r.prefSrc ? ipText(r.prefSrc) : "",
      // A cross-family next hop (RTA_VIA) is surfaced as the gateway, as upstream does.
      gateway: r.gateway ? ipText(r.gateway) : "",
      ...(r.oif && names.has(r.oif) ? { outLinkIndex: r.oif } : {}),
      ...(outLinkName ? { outLinkName } : {}),
      table: routingTableName(r.table),
      priority: r.priority ?? 0,
      scope: scopeName(r.scope),
      type: routeTypeName(r.type),
      flags: routeFlagsText(r.flags),
      protocol: routeProtocolName(r.protocol),
      ...(r.mtu ? { mtu: r.mtu } : {}),
      ...(nextHops.length ? { nextHops } : {}),
    };
    const id = routeId(spec);
    // Routes that differ only in fields outside the id collapse into one resource upstream; last one wins.
    out.delete(id);
    out.set(id, { id, spec });
  }
  return [...out.values()];
}

export async function observeRoutes(opts?: NetnsOptions): Promise<Array<Observed<RouteStatusSpec>>> {
  return withDumps(opts?.netns, (d) => {
    const links = d.links();
    return [...routeSpecs(d.routes(AF_INET), links), ...routeSpecs(d.routes(AF_INET6), links)];
  });
}
