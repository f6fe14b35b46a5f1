/**
 * The oracle for the netlink observers: how machined read the kernel before it spoke rtnetlink itself,
 * by parsing iproute2's JSON (`ip -N -j ...`). The live test compares both views of one namespace, so
 * the netlink decoding is checked against an independent reading of the same kernel state.
 */
import { execFileSync } from "node:child_process";
import {
  IFA_F_PERMANENT, LINK_FLAGS, OPER_STATES, addressFlagsText, ROUTE_PROTOCOLS, ROUTE_TYPES, SCOPES, TABLE_MAIN, familyName, linkFlagsText,
  linkTypeName, operStateName, routeFlagsText, routeProtocolName, routeTypeName, routingTableName, scopeName,
} from "../../../src/host/net/names.js";
import { routeId } from "../../../src/host/net/routes.js";
import type { AddressStatusSpec, LinkStatusSpec, Observed, RouteNextHopSpec, RouteStatusSpec } from "../../../src/host/net/types.js";

export function ipJson<T>(netns: string, ...args: string[]): T {
  const out = execFileSync("ip", [...(netns ? ["-n", netns] : []), "-N", "-j", ...args], { encoding: "utf8" });
  return JSON.parse(out.trim() || "[]") as T;
}

/** iproute2's names for link types (printed when it runs without -N), for parsing older captures. */
export const VLAN_PROTOCOLS: Record<string, string> = { "802.1q": "802.1q", "802.1ad": "802.1ad" };

/**
 * iproute2 prints "default" for /0, a bare address for host routes and `0/<len>` when the kernel sent a
 * length without an address. Upstream renders a missing destination as "" (an invalid netip.Prefix).
 */
export function routeDst(dst: string, family: 2 | 10): string {
  if (dst === "default" || /^0\/\d+\s*$/.test(dst)) return "";
  return dst.includes("/") ? dst : `${dst}/${family === 2 ? 32 : 128}`;
}

export const IP_LINK_TYPES: Record<string, number> = {
  generic: 0, ether: 1, infiniband: 32, can: 280, ppp: 512, ipip: 768, tunnel6: 769, loopback: 772, sit: 776,
  gre: 778, "ieee802.11": 801, gre6: 823, none: 65534, void: 65535,
};
/** iproute2 spells IFF_POINTOPOINT without the second T. */
const IP_LINK_FLAG_ALIASES: Record<string, string> = { POINTOPOINT: "POINTTOPOINT" };
/** iproute2's operstate words, indexed like IF_OPER_*. */
export const IP_OPER_STATES = ["UNKNOWN", "NOTPRESENT", "DOWN", "LOWERLAYERDOWN", "TESTING", "DORMANT", "UP"];
/** iproute2's JSON boolean keys for address flags → IFA_F_* bit ("dynamic" is the absence of permanent). */
export const IP_ADDRESS_FLAGS: Record<string, number> = {
  secondary: 0x01, temporary: 0x01, nodad: 0x02, optimistic: 0x04, dadfailed: 0x08, home: 0x10, deprecated: 0x20,
  tentative: 0x40, mngtmpaddr: 0x100, noprefixroute: 0x200, autojoin: 0x400, "stable-privacy": 0x800,
};
/** iproute2's route flag words → rtm_flags bits. */
export const IP_ROUTE_FLAGS: Record<string, number> = {
  dead: 0x01, pervasive: 0x02, onlink: 0x04, offload: 0x08, linkdown: 0x10, unresolved: 0x20, trap: 0x40,
  notify: 0x100, rt_offload: 0x4000, rt_trap: 0x8000, rt_offload_failed: 0x20000000,
};

export function linkFlagBit(ipName: string): number {
  const i = LINK_FLAGS.indexOf(IP_LINK_FLAG_ALIASES[ipName] ?? ipName);
  return i < 0 ? 0 : 1 << i;
}

/**
 * A value from iproute2's JSON as a kernel number: numeric with -N, else a name we look up in `table`
 * (Talos's names mostly match iproute2's). Unknown names give NaN so callers can notice.
 */
export function ipNumber(v: unknown, table: Record<number, string> = {}): number {
  if (typeof v === "number") return v;
  const s = String(v ?? "");
  if (/^\d+$/.test(s)) return Number(s);
  const hit = Object.entries(table).find(([, name]) => name === s);
  return hit ? Number(hit[0]) : Number.NaN;
}

/** Observed links (`ip -N -j -d link show`) → LinkStatus specs, keyed by link name like upstream. */

/** The subset of iproute2's link JSON we read. */
export interface IpLink {
  ifindex: number;
  ifname: string;
  link?: string | null;
  link_index?: number;
  flags?: string[];
  mtu?: number;
  qdisc?: string;
  master?: string;
  operstate?: string;
  operstate_index?: number;
  link_type?: string;
  address?: string;
  broadcast?: string;
  permaddr?: string;
  ifalias?: string;
  altnames?: string[];
  parentdev?: string;
  linkinfo?: { info_kind?: string; info_slave_kind?: string; info_data?: Record<string, unknown> };
}

/** Name → ifindex within one namespace's dump, for iproute2's name-valued references. */
export function indexByName(links: Array<{ ifindex: number; ifname: string }>): Map<string, number> {
  return new Map(links.map((l) => [l.ifname, l.ifindex]));
}

/** iproute2 prints unknown interface references as "if<N>". */
function resolveIndex(name: string | null | undefined, byName: Map<string, number>): number {
  if (!name) return 0;
  return byName.get(name) ?? (/^if\d+$/.test(name) ? Number(name.slice(2)) : 0);
}

function linkTypeNumber(t: string | undefined): number {
  if (!t) return 0xffff;
  const m = /^\[(\d+)\]$/.exec(t);
  return m ? Number(m[1]) : (IP_LINK_TYPES[t] ?? 0xffff);
}

/**
 * Hardware addresses as Go's net.HardwareAddr prints them. iproute2 renders tunnel endpoints
 * (ipip/sit/gre: 4 bytes, ip6tnl/ip6gre: 16 bytes) as IP addresses; Talos shows the raw bytes.
 */
export function hardwareAddr(s: string | undefined): string {
  if (!s) return "";
  const hex = (bytes: number[]) => bytes.map((b) => b.toString(16).padStart(2, "0")).join(":");
  if (/^\d+\.\d+\.\d+\.\d+$/.test(s)) return hex(s.split(".").map(Number));
  if (s.includes("::") || s.split(":").some((g) => g.length > 2)) return hex(ipv6Bytes(s));
  return s.toLowerCase();
}

function ipv6Bytes(s: string): number[] {
  const [head, tail] = s.includes("::") ? s.split("::") : [s, ""];
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill("0"), ...t];
  return groups.map((g) => Number.parseInt(g, 16) || 0).flatMap((g) => [g >> 8, g & 0xff]);
}

/** Rebuilds the kernel's ifi_flags from iproute2's list (which hides RUNNING and adds pseudo-flags). */
export function linkFlags(ipFlags: string[] = []): number {
  let bits = 0;
  for (const f of ipFlags) {
    if (/^[0-9a-f]+$/i.test(f) && !linkFlagBit(f)) bits |= Number.parseInt(f, 16); // unnamed leftover bits
    else bits |= linkFlagBit(f);
  }
  // iproute2 strips IFF_RUNNING and prints NO-CARRIER for "UP but not RUNNING", so UP without
  // NO-CARRIER means RUNNING was set.
  if (ipFlags.includes("UP") && !ipFlags.includes("NO-CARRIER")) bits |= linkFlagBit("RUNNING");
  return bits;
}

function operState(l: IpLink): string {
  if (l.operstate_index !== undefined) return operStateName(l.operstate_index);
  const i = IP_OPER_STATES.indexOf(l.operstate ?? "UNKNOWN");
  return i < 0 ? OPER_STATES[0] : operStateName(i);
}

/** Upstream's rule: the peer is the veth whose index we link to and which links back to us. */
function vethPeer(l: IpLink, all: IpLink[], byName: Map<string, number>): string {
  const linkIndex = l.link_index ?? resolveIndex(l.link, byName);
  const cand = all.find((c) => c.ifindex === linkIndex);
  if (!cand || cand.linkinfo?.info_kind !== "veth") return "";
  return (cand.link_index ?? resolveIndex(cand.link, byName)) === l.ifindex ? cand.ifname : "";
}

/** Reorders a spec's keys into upstream's field order so YAML renders like Talos's. */
function ordered(spec: LinkStatusSpec): LinkStatusSpec {
  const order: Array<keyof LinkStatusSpec> = [
    "alias", "altNames", "index", "type", "linkIndex", "flags", "hardwareAddr", "permanentAddr", "broadcastAddr",
    "mtu", "queueDisc", "masterIndex", "operationalState", "kind", "slaveKind", "busPath", "pciID", "driver",
    "driverVersion", "firmwareVersion", "productID", "vendorID", "product", "vendor", "linkState", "speedMbit",
    "port", "duplex", "vlan", "bridgeMaster", "vrfMaster", "veth",
  ];
  return Object.fromEntries(order.filter((k) => spec[k] !== undefined).map((k) => [k, spec[k]])) as unknown as LinkStatusSpec;
}

export function parseLinks(json: IpLink[]): Array<Observed<LinkStatusSpec>> {
  const byName = indexByName(json);
  return json.map((l) => {
    const flags = linkFlags(l.flags);
    const kind = l.linkinfo?.info_kind ?? "";
    const spec: LinkStatusSpec = {
      ...(l.ifalias ? { alias: l.ifalias } : {}),
      ...(l.altnames?.length ? { altNames: [...l.altnames] } : {}),
      index: l.ifindex,
      type: linkTypeName(linkTypeNumber(l.link_type)),
      linkIndex: l.link_index ?? resolveIndex(l.link, byName),
      flags: linkFlagsText(flags),
      hardwareAddr: hardwareAddr(l.address),
      permanentAddr: hardwareAddr(l.permaddr),
      broadcastAddr: hardwareAddr(l.broadcast),
      mtu: l.mtu ?? 0,
      queueDisc: l.qdisc ?? "",
      ...(l.master ? { masterIndex: resolveIndex(l.master, byName) } : {}),
      operationalState: operState(l),
      kind,
      slaveKind: l.linkinfo?.info_slave_kind ?? "",
      // The parent device name is what ethtool reports as bus info (PCI slot, virtioN, …).
      ...(l.parentdev ? { busPath: l.parentdev } : {}),
      // Without ethtool, carrier-with-running (LOWER_UP) is the closest observable to its link state.
      linkState: (flags & linkFlagBit("LOWER_UP")) !== 0,
      port: "Other",
      duplex: "Unknown",
    };
    if (kind === "vlan") {
      const d = l.linkinfo?.info_data ?? {};
      const proto = String(d.protocol ?? "802.1Q").toLowerCase();
      spec.vlan = { vlanID: Number(d.id ?? 0), vlanProtocol: VLAN_PROTOCOLS[proto] ?? proto };
    }
    if (kind === "bridge") {
      // Upstream omits each part (and the whole object) while it is all-false.
      const d = l.linkinfo?.info_data ?? {};
      const bm: NonNullable<LinkStatusSpec["bridgeMaster"]> = {
        ...(Number(d.stp_state ?? 0) !== 0 ? { stp: { enabled: true } } : {}),
        ...(Number(d.vlan_filtering ?? 0) !== 0 ? { vlan: { filteringEnabled: true } } : {}),
      };
      if (Object.keys(bm).length) spec.bridgeMaster = bm;
    }
    if (kind === "vrf" && l.linkinfo?.info_data?.table !== undefined) {
      spec.vrfMaster = { table: routingTableName(ipNumber(l.linkinfo.info_data.table)) };
    }
    if (kind === "veth") {
      const peerName = vethPeer(l, json, byName);
      if (peerName) spec.veth = { peerName };
    }
    return { id: l.ifname, spec: ordered(spec) };
  });
}



/** Observed addresses (`ip -N -j addr show`) → AddressStatus specs with ids `<link>/<addr>/<bits>`. */

export interface IpAddrInfo {
  family: string;
  local?: string;
  /** Present only when IFA_ADDRESS differs from IFA_LOCAL (the peer of a point-to-point address). */
  address?: string;
  prefixlen: number;
  broadcast?: string;
  anycast?: string;
  multicast?: string;
  scope?: string | number;
  metric?: number;
  ifa_flags?: string;
  [flag: string]: unknown;
}

export interface IpAddrLink {
  ifindex: number;
  ifname: string;
  addr_info?: IpAddrInfo[];
}

const FAMILY_NUMBERS: Record<string, number> = { inet: 2, inet6: 10 };

/** Rebuilds IFA_FLAGS from iproute2's booleans; it reports "dynamic" for the absence of permanent. */
export function addressFlags(a: IpAddrInfo): number {
  let bits = a.dynamic === true ? 0 : IFA_F_PERMANENT;
  for (const [key, bit] of Object.entries(IP_ADDRESS_FLAGS)) if (a[key] === true) bits |= bit;
  if (typeof a.ifa_flags === "string") bits |= Number.parseInt(a.ifa_flags, 16) || 0;
  return bits;
}

export function parseAddresses(json: IpAddrLink[]): Array<Observed<AddressStatusSpec>> {
  const out: Array<Observed<AddressStatusSpec>> = [];
  for (const link of json) {
    for (const a of link.addr_info ?? []) {
      const family = FAMILY_NUMBERS[a.family];
      if (family === undefined || !a.local) continue;
      // Upstream keys on IFA_ADDRESS (the peer for point-to-point) and reports IFA_LOCAL separately; the
      // kernel sends IFA_LOCAL for every IPv4 address but for IPv6 only alongside a peer.
      const address = `${a.address ?? a.local}/${a.prefixlen}`;
      const local = family === 2 || a.address !== undefined ? a.local : undefined;
      const spec: AddressStatusSpec = {
        address,
        ...(local ? { local } : {}),
        ...(a.broadcast ? { broadcast: a.broadcast } : {}),
        ...(a.anycast ? { anycast: a.anycast } : {}),
        ...(a.multicast ? { multicast: a.multicast } : {}),
        linkIndex: link.ifindex,
        linkName: link.ifname,
        family: familyName(family),
        scope: scopeName(ipNumber(a.scope ?? 0, SCOPES)),
        flags: addressFlagsText(addressFlags(a)),
        priority: a.metric ?? 0,
      };
      out.push({ id: `${link.ifname}/${address}`, spec });
    }
  }
  return out;
}


/**
 * Observed routes of every table (`ip -N -j -d -4|-6 route show table all`) → RouteStatus specs with
 * upstream's ids: `[<table>/ if not main][<link>/ if inet6]<family>/<gw>/<dst>/<priority>`.
 */

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


/** Links, addresses and routes of `netns` as the iproute2-based observers reported them. */
export function ipObserve(netns: string) {
  const rawLinks = ipJson<IpLink[]>(netns, "-d", "link", "show");
  return {
    links: parseLinks(rawLinks),
    addresses: parseAddresses(ipJson<IpAddrLink[]>(netns, "addr", "show")),
    routes: [
      ...parseRoutes(ipJson<IpRoute[]>(netns, "-d", "-4", "route", "show", "table", "all"), 2, rawLinks),
      ...parseRoutes(ipJson<IpRoute[]>(netns, "-d", "-6", "route", "show", "table", "all"), 10, rawLinks),
    ],
  };
}
