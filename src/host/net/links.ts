/** Observed links (`ip -N -j -d link show`) → LinkStatus specs, keyed by link name like upstream. */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { type NetnsOptions, ipJson } from "./ip.js";
import {
  DUPLEX, IP_LINK_TYPES, IP_OPER_STATES, OPER_STATES, VLAN_PROTOCOLS, ipNumber, linkFlagBit, linkFlagsText,
  linkTypeName, operStateName, routingTableName,
} from "./names.js";
import type { LinkStatusSpec, Observed } from "./types.js";

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

export interface ObserveLinksOptions extends NetnsOptions {
  /** Root for /sys when observing our own namespace (device driver, speed, duplex); defaults to "/". */
  root?: string;
}

async function readSys(file: string): Promise<string | undefined> {
  try {
    return (await readFile(file, "utf8")).trim();
  } catch {
    return undefined;
  }
}

/** Adds what sysfs knows about a device in our own namespace (upstream gets these from sysfs and ethtool). */
export async function enrichFromSysfs(spec: LinkStatusSpec, name: string, root = "/"): Promise<void> {
  const dir = path.join(root, "sys/class/net", name);
  const uevent = await readSys(path.join(dir, "device/uevent"));
  for (const line of uevent?.split("\n") ?? []) {
    const [k, v] = [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)];
    if (k === "DRIVER" && v) spec.driver = v;
    if (k === "PCI_ID" && v) spec.pciID = v;
    if (k === "PCI_SLOT_NAME" && v) spec.busPath = v;
  }
  const speed = Number(await readSys(path.join(dir, "speed")));
  if (Number.isInteger(speed) && speed > 0) spec.speedMbit = speed;
  const duplex = await readSys(path.join(dir, "duplex"));
  if (duplex && DUPLEX[duplex]) spec.duplex = DUPLEX[duplex];
}

export async function observeLinks(opts?: ObserveLinksOptions): Promise<Array<Observed<LinkStatusSpec>>> {
  const links = parseLinks(await ipJson<IpLink[]>(["-d", "link", "show"], opts));
  // sysfs shows our own namespace's devices only, so skip it when looking into another one.
  if (!opts?.netns) await Promise.all(links.map((l) => enrichFromSysfs(l.spec, l.id, opts?.root)));
  return links.map((l) => ({ id: l.id, spec: ordered(l.spec) }));
}
