/**
 * Observed routes of every table (`ip -N -j -d -4|-6 route show table all`) → RouteStatus specs with
 * upstream's ids: `[<table>/ if not main][<link>/ if inet6]<family>/<gw>/<dst>/<priority>`.
 */
import { type NetnsOptions, ipJson } from "./ip.js";
import { type IpLink, indexByName } from "./links.js";
import {
  IP_ROUTE_FLAGS, ROUTE_PROTOCOLS, ROUTE_TYPES, SCOPES, TABLE_MAIN, familyName, ipNumber, routeFlagsText,
  routeProtocolName, routeTypeName, routingTableName, scopeName,
} from "./names.js";
import type { Observed, RouteNextHopSpec, RouteStatusSpec } from "./types.js";

interface IpVia {
  family?: string;
  host?: string;
}

export interface IpRoute {
  type?: string | number;
  dst: string;
  gateway?: string;
  via?: IpVia;
  dev?: string;
  table?: string | number;
  protocol?: string | number;
  scope?: string | number;
  prefsrc?: string;
  metric?: number;
  flags?: string[];
  metrics?: Array<{ mtu?: number }>;
  nexthops?: Array<{ gateway?: string; via?: IpVia; dev?: string; weight?: number; flags?: string[] }>;
}

/**
 * iproute2 prints "default" for /0, a bare address for host routes and `0/<len>` when the kernel sent a
 * length without an address. Upstream renders a missing destination as "" (an invalid netip.Prefix).
 */
export function routeDst(dst: string, family: 2 | 10): string {
  if (dst === "default" || /^0\/\d+\s*$/.test(dst)) return "";
  return dst.includes("/") ? dst : `${dst}/${family === 2 ? 32 : 128}`;
}

export function routeId(r: Pick<RouteStatusSpec, "table" | "family" | "dst" | "gateway" | "priority" | "outLinkName">): string {
  let prefix = r.table === "main" ? "" : `${r.table}/`;
  if (r.family === "inet6") prefix += `${r.outLinkName ?? ""}/`;
  return `${prefix}${r.family}/${r.gateway}/${r.dst}/${r.priority}`;
}

function flagBits(flags: string[] = []): number {
  return flags.reduce((bits, f) => bits | (IP_ROUTE_FLAGS[f] ?? 0), 0);
}

/** Parses one family's dump; `links` (same namespace) resolve device names to indexes. */
export function parseRoutes(json: IpRoute[], family: 2 | 10, links: IpLink[]): Array<Observed<RouteStatusSpec>> {
  const byName = indexByName(links);
  const out = new Map<string, Observed<RouteStatusSpec>>();
  for (const r of json) {
    const table = ipNumber(r.table ?? TABLE_MAIN, { 253: "default", 254: "main", 255: "local" });
    const outLinkIndex = r.dev ? (byName.get(r.dev) ?? 0) : 0;
    const nextHops: RouteNextHopSpec[] = (r.nexthops ?? []).map((nh) => ({
      gateway: nh.gateway ?? nh.via?.host ?? "",
      ...(nh.dev ? { outLinkName: nh.dev } : {}),
      ...(nh.weight ? { weight: nh.weight } : {}),
    }));
    const mtu = r.metrics?.find((m) => m.mtu !== undefined)?.mtu;
    const spec: RouteStatusSpec = {
      family: familyName(family),
      dst: routeDst(r.dst, family),
      src: r.prefsrc ?? "",
      // A cross-family next hop (RTA_VIA) is surfaced as the gateway, as upstream does.
      gateway: r.gateway ?? r.via?.host ?? "",
      ...(outLinkIndex ? { outLinkIndex } : {}),
      ...(r.dev ? { outLinkName: r.dev } : {}),
      table: routingTableName(table),
      priority: r.metric ?? 0,
      scope: scopeName(ipNumber(r.scope ?? 0, SCOPES)),
      type: routeTypeName(ipNumber(r.type ?? 1, ROUTE_TYPES)),
      flags: routeFlagsText(flagBits(r.flags)),
      protocol: routeProtocolName(ipNumber(r.protocol ?? 3, ROUTE_PROTOCOLS)),
      ...(mtu ? { mtu } : {}),
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
  const [links, v4, v6] = await Promise.all([
    ipJson<IpLink[]>(["link", "show"], opts),
    ipJson<IpRoute[]>(["-d", "-4", "route", "show", "table", "all"], opts),
    ipJson<IpRoute[]>(["-d", "-6", "route", "show", "table", "all"], opts).catch((err: unknown) => {
      // A kernel without IPv6 has no IPv6 routes to observe; anything else is a real failure.
      if (/not supported/i.test(String((err as { stderr?: string }).stderr ?? err))) return [];
      throw err;
    }),
  ]);
  return [...parseRoutes(v4, 2, links), ...parseRoutes(v6, 10, links)];
}
