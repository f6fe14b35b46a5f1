/**
 * rtnetlink wire format (pure: bytes in, records out). Requests for the three dumps we need and decoders
 * for the replies and change notifications: RTM_NEWLINK (ifinfomsg), RTM_NEWADDR (ifaddrmsg) and
 * RTM_NEWROUTE (rtmsg), each with the attributes the status specs are built from. Numbers are the
 * kernel's uapi constants (linux/netlink.h, linux/rtnetlink.h, linux/if_link.h, linux/if_addr.h).
 */

export const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;
export const NLMSG_OVERRUN = 4;
export const NLM_F_REQUEST = 0x1;
export const NLM_F_MULTI = 0x2;
export const NLM_F_DUMP = 0x300;

export const RTM_NEWLINK = 16;
export const RTM_DELLINK = 17;
export const RTM_GETLINK = 18;
export const RTM_NEWADDR = 20;
export const RTM_DELADDR = 21;
export const RTM_GETADDR = 22;
export const RTM_NEWROUTE = 24;
export const RTM_DELROUTE = 25;
export const RTM_GETROUTE = 26;

export const AF_UNSPEC = 0;
export const AF_INET = 2;
export const AF_INET6 = 10;

/** Multicast groups (bit = 1 << (RTNLGRP_x - 1)): links, IPv4/IPv6 addresses, IPv4/IPv6 routes. */
export const RTMGRP_LINK = 0x1;
export const RTMGRP_IPV4_IFADDR = 0x10;
export const RTMGRP_IPV4_ROUTE = 0x40;
export const RTMGRP_IPV6_IFADDR = 0x100;
export const RTMGRP_IPV6_ROUTE = 0x400;
export const MONITOR_GROUPS = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE;

/** rtm_flags bit the kernel sets on cached/exception routes; iproute2 hides them unless asked, so do we. */
export const RTM_F_CLONED = 0x200;

const align4 = (n: number) => (n + 3) & ~3;

export interface NlMessage {
  type: number;
  flags: number;
  seq: number;
  pid: number;
  /** The payload after the 16-byte header. */
  body: Buffer;
}

/** Splits a datagram into netlink messages; a truncated tail is dropped rather than misread. */
export function splitMessages(buf: Buffer): NlMessage[] {
  const out: NlMessage[] = [];
  let off = 0;
  while (off + 16 <= buf.length) {
    const len = buf.readUInt32LE(off);
    if (len < 16 || off + len > buf.length) break;
    out.push({
      type: buf.readUInt16LE(off + 4),
      flags: buf.readUInt16LE(off + 6),
      seq: buf.readUInt32LE(off + 8),
      pid: buf.readUInt32LE(off + 12),
      body: buf.subarray(off + 16, off + len),
    });
    off += align4(len);
  }
  return out;
}

/** The errno of an NLMSG_ERROR body (0 = acknowledgement), as a positive number. */
export function errorCode(body: Buffer): number {
  return body.length >= 4 ? -body.readInt32LE(0) : 0;
}

/** A dump request for `type` with a zeroed family header of `headerLen` bytes (family in its first byte). */
export function dumpRequest(type: number, family: number, headerLen: number, seq: number): Buffer {
  const len = 16 + align4(headerLen);
  const b = Buffer.alloc(len);
  b.writeUInt32LE(len, 0);
  b.writeUInt16LE(type, 4);
  b.writeUInt16LE(NLM_F_REQUEST | NLM_F_DUMP, 6);
  b.writeUInt32LE(seq, 8);
  b.writeUInt8(family, 16);
  return b;
}

export const IFINFOMSG_LEN = 16;
export const IFADDRMSG_LEN = 8;
export const RTMSG_LEN = 12;

/** Attributes of one level: type (nested/byte-order bits masked off) → payload; repeated types keep the first. */
export function parseAttrs(buf: Buffer, from = 0): Map<number, Buffer> {
  const attrs = new Map<number, Buffer>();
  for (const [type, data] of attrList(buf, from)) if (!attrs.has(type)) attrs.set(type, data);
  return attrs;
}

/** Attributes in order, repeats included (alternative names, multipath next hops). */
export function attrList(buf: Buffer, from = 0): Array<[number, Buffer]> {
  const out: Array<[number, Buffer]> = [];
  let off = from;
  while (off + 4 <= buf.length) {
    const len = buf.readUInt16LE(off);
    if (len < 4 || off + len > buf.length) break;
    out.push([buf.readUInt16LE(off + 2) & 0x3fff, buf.subarray(off + 4, off + len)]);
    off += align4(len);
  }
  return out;
}

/** A NUL-terminated string attribute. */
export function attrString(b: Buffer | undefined): string | undefined {
  if (!b) return undefined;
  const nul = b.indexOf(0);
  return b.toString("utf8", 0, nul < 0 ? b.length : nul);
}

const u32 = (b: Buffer | undefined) => (b && b.length >= 4 ? b.readUInt32LE(0) : undefined);
const u16 = (b: Buffer | undefined) => (b && b.length >= 2 ? b.readUInt16LE(0) : undefined);
const u8 = (b: Buffer | undefined) => (b && b.length >= 1 ? b.readUInt8(0) : undefined);

// ------------------------------------------------------------------------------------------ addresses

/** Go's/iproute2's textual forms: dotted IPv4, RFC 5952 IPv6 (inet_ntop, including its embedded-IPv4 forms). */
export function ipText(b: Buffer): string {
  if (b.length === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
  if (b.length !== 16) return hexBytes(b);
  const words = Array.from({ length: 8 }, (_, i) => b.readUInt16BE(i * 2));
  // The longest run of two or more zero words becomes "::" (the first one on a tie).
  let best = { base: -1, len: 0 };
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > best.len && j - i >= 2) best = { base: i, len: j - i };
    i = j;
  }
  let out = "";
  for (let i = 0; i < 8; i++) {
    if (best.base >= 0 && i >= best.base && i < best.base + best.len) {
      if (i === best.base) out += ":";
      continue;
    }
    if (i > 0) out += ":";
    // inet_ntop prints ::a.b.c.d and ::ffff:a.b.c.d with the last 32 bits dotted.
    if (i === 6 && best.base === 0 && (best.len === 6 || (best.len === 5 && words[5] === 0xffff))) {
      out += `${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
      break;
    }
    out += words[i].toString(16);
  }
  if (best.base >= 0 && best.base + best.len === 8) out += ":";
  return out;
}

/** Link-layer addresses as Go's net.HardwareAddr prints them: lower-case hex pairs joined by ":". */
export function hexBytes(b: Buffer | undefined): string {
  if (!b || b.length === 0) return "";
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join(":");
}

// ---------------------------------------------------------------------------------------------- links

const IFLA_ADDRESS = 1;
const IFLA_BROADCAST = 2;
const IFLA_IFNAME = 3;
const IFLA_MTU = 4;
const IFLA_LINK = 5;
const IFLA_QDISC = 6;
const IFLA_MASTER = 10;
const IFLA_OPERSTATE = 16;
const IFLA_LINKINFO = 18;
const IFLA_IFALIAS = 20;
const IFLA_LINK_NETNSID = 37;
const IFLA_PROP_LIST = 52;
const IFLA_ALT_IFNAME = 53;
const IFLA_PERM_ADDRESS = 54;
const IFLA_PARENT_DEV_NAME = 56;
const IFLA_INFO_KIND = 1;
const IFLA_INFO_DATA = 2;
const IFLA_INFO_SLAVE_KIND = 4;

export interface NlLink {
  index: number;
  /** ARPHRD_* */
  type: number;
  flags: number;
  name: string;
  address?: Buffer;
  broadcast?: Buffer;
  permAddress?: Buffer;
  mtu?: number;
  /** IFLA_LINK: the lower device (or the veth peer), 0 when absent. */
  link: number;
  /** The IFLA_LINK index is in another namespace (IFLA_LINK_NETNSID present). */
  linkOtherNetns: boolean;
  qdisc?: string;
  master?: number;
  operState: number;
  alias?: string;
  altNames: string[];
  parentDev?: string;
  kind?: string;
  slaveKind?: string;
  /** IFLA_INFO_DATA attributes (kind-specific numbering). */
  infoData?: Map<number, Buffer>;
}

export function decodeLink(body: Buffer): NlLink | undefined {
  if (body.length < IFINFOMSG_LEN) return undefined;
  const a = parseAttrs(body, IFINFOMSG_LEN);
  const name = attrString(a.get(IFLA_IFNAME));
  if (name === undefined) return undefined;
  const info = a.get(IFLA_LINKINFO) ? parseAttrs(a.get(IFLA_LINKINFO)!) : undefined;
  const props = a.get(IFLA_PROP_LIST);
  const alias = attrString(a.get(IFLA_IFALIAS));
  return {
    index: body.readInt32LE(4),
    type: body.readUInt16LE(2),
    flags: body.readUInt32LE(8),
    name,
    address: a.get(IFLA_ADDRESS),
    broadcast: a.get(IFLA_BROADCAST),
    permAddress: a.get(IFLA_PERM_ADDRESS),
    mtu: u32(a.get(IFLA_MTU)),
    link: u32(a.get(IFLA_LINK)) ?? 0,
    linkOtherNetns: a.has(IFLA_LINK_NETNSID),
    qdisc: attrString(a.get(IFLA_QDISC)),
    master: u32(a.get(IFLA_MASTER)),
    operState: u8(a.get(IFLA_OPERSTATE)) ?? 0,
    ...(alias ? { alias } : {}),
    altNames: props ? attrList(props).filter(([t]) => t === IFLA_ALT_IFNAME).map(([, v]) => attrString(v)!) : [],
    parentDev: attrString(a.get(IFLA_PARENT_DEV_NAME)),
    kind: attrString(info?.get(IFLA_INFO_KIND)),
    slaveKind: attrString(info?.get(IFLA_INFO_SLAVE_KIND)),
    infoData: info?.get(IFLA_INFO_DATA) ? parseAttrs(info.get(IFLA_INFO_DATA)!) : undefined,
  };
}

/** IFLA_VLAN_ID / IFLA_VLAN_PROTOCOL (network byte order). */
export function vlanInfo(data: Map<number, Buffer> | undefined): { id: number; protocol: number } {
  const proto = data?.get(5);
  return { id: u16(data?.get(1)) ?? 0, protocol: proto && proto.length >= 2 ? proto.readUInt16BE(0) : 0x8100 };
}

/** IFLA_BR_STP_STATE (u32) and IFLA_BR_VLAN_FILTERING (u8). */
export function bridgeInfo(data: Map<number, Buffer> | undefined): { stp: number; vlanFiltering: number } {
  return { stp: u32(data?.get(5)) ?? 0, vlanFiltering: u8(data?.get(7)) ?? 0 };
}

/** IFLA_VRF_TABLE. */
export function vrfTable(data: Map<number, Buffer> | undefined): number | undefined {
  return u32(data?.get(1));
}

// ------------------------------------------------------------------------------------------ addresses

const IFA_ADDRESS = 1;
const IFA_LOCAL = 2;
const IFA_BROADCAST = 4;
const IFA_ANYCAST = 5;
const IFA_MULTICAST = 7;
const IFA_FLAGS = 8;
const IFA_RT_PRIORITY = 9;

export interface NlAddress {
  family: number;
  prefixLen: number;
  /** IFA_FLAGS when present (it carries the bits above 0x80), else ifa_flags. */
  flags: number;
  scope: number;
  index: number;
  address?: Buffer;
  local?: Buffer;
  broadcast?: Buffer;
  anycast?: Buffer;
  multicast?: Buffer;
  priority?: number;
}

export function decodeAddress(body: Buffer): NlAddress | undefined {
  if (body.length < IFADDRMSG_LEN) return undefined;
  const a = parseAttrs(body, IFADDRMSG_LEN);
  return {
    family: body.readUInt8(0),
    prefixLen: body.readUInt8(1),
    flags: u32(a.get(IFA_FLAGS)) ?? body.readUInt8(2),
    scope: body.readUInt8(3),
    index: body.readUInt32LE(4),
    address: a.get(IFA_ADDRESS),
    local: a.get(IFA_LOCAL),
    broadcast: a.get(IFA_BROADCAST),
    anycast: a.get(IFA_ANYCAST),
    multicast: a.get(IFA_MULTICAST),
    priority: u32(a.get(IFA_RT_PRIORITY)),
  };
}

// --------------------------------------------------------------------------------------------- routes

const RTA_DST = 1;
const RTA_OIF = 4;
const RTA_GATEWAY = 5;
const RTA_PRIORITY = 6;
const RTA_PREFSRC = 7;
const RTA_METRICS = 8;
const RTA_MULTIPATH = 9;
const RTA_TABLE = 15;
const RTA_VIA = 18;
const RTAX_MTU = 2;

export interface NlNextHop {
  flags: number;
  /** rtnh_hops: the weight minus one. */
  hops: number;
  index: number;
  gateway?: Buffer;
}

export interface NlRoute {
  family: number;
  dstLen: number;
  table: number;
  protocol: number;
  scope: number;
  type: number;
  flags: number;
  dst?: Buffer;
  oif?: number;
  gateway?: Buffer;
  priority?: number;
  prefSrc?: Buffer;
  mtu?: number;
  nextHops: NlNextHop[];
}

/** RTA_VIA: a family (u16) followed by the address; the address is what we surface. */
function via(b: Buffer | undefined): Buffer | undefined {
  return b && b.length > 2 ? b.subarray(2) : undefined;
}

export function decodeRoute(body: Buffer): NlRoute | undefined {
  if (body.length < RTMSG_LEN) return undefined;
  const a = parseAttrs(body, RTMSG_LEN);
  const metrics = a.get(RTA_METRICS) ? parseAttrs(a.get(RTA_METRICS)!) : undefined;
  const nextHops: NlNextHop[] = [];
  const mp = a.get(RTA_MULTIPATH);
  for (let off = 0; mp && off + 8 <= mp.length; ) {
    const len = mp.readUInt16LE(off);
    if (len < 8 || off + len > mp.length) break;
    const nh = parseAttrs(mp.subarray(off, off + len), 8);
    nextHops.push({
      flags: mp.readUInt8(off + 2),
      hops: mp.readUInt8(off + 3),
      index: mp.readInt32LE(off + 4),
      gateway: nh.get(RTA_GATEWAY) ?? via(nh.get(RTA_VIA)),
    });
    off += align4(len);
  }
  return {
    family: body.readUInt8(0),
    dstLen: body.readUInt8(1),
    table: u32(a.get(RTA_TABLE)) ?? body.readUInt8(4),
    protocol: body.readUInt8(5),
    scope: body.readUInt8(6),
    type: body.readUInt8(7),
    flags: body.readUInt32LE(8),
    dst: a.get(RTA_DST),
    oif: u32(a.get(RTA_OIF)),
    gateway: a.get(RTA_GATEWAY) ?? via(a.get(RTA_VIA)),
    priority: u32(a.get(RTA_PRIORITY)),
    prefSrc: a.get(RTA_PREFSRC),
    mtu: u32(metrics?.get(RTAX_MTU)),
    nextHops,
  };
}

/** Which observations a notification invalidates. Link changes rename/renumber addresses and routes too. */
export type NetKind = "links" | "addresses" | "routes";

export function kindsOf(type: number): NetKind[] {
  switch (type) {
    case RTM_NEWLINK:
    case RTM_DELLINK:
      return ["links", "addresses", "routes"];
    case RTM_NEWADDR:
    case RTM_DELADDR:
      return ["addresses"];
    case RTM_NEWROUTE:
    case RTM_DELROUTE:
      return ["routes"];
    default:
      return [];
  }
}
