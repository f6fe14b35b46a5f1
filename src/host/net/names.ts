/**
 * Kernel numbers → the text Talos prints for them (its nethelpers enums, generated with enumer
 * `-linecomment`). Unknown values render as `TypeName(N)`, which is what enumer's String() does.
 * The tables are exported so a proto encoder can map the text back to numbers.
 */

const named = (typeName: string, table: Record<number, string>) => (n: number) => table[n] ?? `${typeName}(${n})`;

export const FAMILIES: Record<number, string> = { 2: "inet4", 10: "inet6" };
export const familyName = named("Family", FAMILIES);

export const SCOPES: Record<number, string> = { 0: "global", 200: "site", 253: "link", 254: "host", 255: "nowhere" };
export const scopeName = named("Scope", SCOPES);

export const LINK_TYPES: Record<number, string> = {
  0: "netrom", 1: "ether", 2: "eether", 3: "ax25", 4: "pronet", 5: "chaos", 6: "ieee802", 7: "arcnet", 8: "atalk",
  15: "dlci", 19: "atm", 23: "metricom", 24: "ieee1394", 27: "eui64", 32: "infiniband", 256: "slip", 257: "cslip",
  258: "slip6", 259: "cslip6", 260: "rsrvd", 264: "adapt", 270: "rose", 271: "x25", 272: "hwx25", 280: "can",
  512: "ppp", 513: "cisco", 516: "lapb", 517: "ddcmp", 518: "rawhdlc", 768: "ipip", 769: "tunnel6", 770: "frad",
  771: "skip", 772: "loopback", 773: "localtlk", 774: "fddi", 775: "bif", 776: "sit", 777: "ip/ddp", 778: "gre",
  779: "pimreg", 780: "hippi", 781: "ash", 782: "econet", 783: "irda", 784: "fcpp", 785: "fcal", 786: "fcpl",
  787: "fcfb_0", 788: "fcfb_1", 789: "fcfb_2", 790: "fcfb_3", 791: "fcfb_4", 792: "fcfb_5", 793: "fcfb_6",
  794: "fcfb_7", 795: "fcfb_8", 796: "fcfb_9", 797: "fcfb_10", 798: "fcfb_11", 799: "fcfb_12", 800: "tr",
  801: "ieee802.11", 802: "ieee802.11_prism", 803: "ieee802.11_radiotap", 804: "ieee802.15.4",
  805: "ieee802.15.4_monitor", 820: "phonet", 821: "phonet_pipe", 822: "caif", 823: "ip6gre", 824: "netlink",
  825: "6lowpan", 65534: "nohdr", 65535: "void",
};
export const linkTypeName = named("LinkType", LINK_TYPES);


/** Link flags in bit order (IFF_*); Talos joins the set ones with ",". */
export const LINK_FLAGS = [
  "UP", "BROADCAST", "DEBUG", "LOOPBACK", "POINTTOPOINT", "NOTRAILERS", "RUNNING", "NOARP", "PROMISC", "ALLMULTI",
  "MASTER", "SLAVE", "MULTICAST", "PORTSEL", "AUTOMEDIA", "DYNAMIC", "LOWER_UP", "DORMANT", "ECHO",
];


export function linkFlagsText(bits: number): string {
  return LINK_FLAGS.filter((_, i) => bits & (1 << i)).join(",");
}

export const OPER_STATES: Record<number, string> = {
  0: "unknown", 1: "notPresent", 2: "down", 3: "lowerLayerDown", 4: "testing", 5: "dormant", 6: "up",
};
export const operStateName = named("OperationalState", OPER_STATES);

/** IFA_F_* bits in order; index i is bit 1<<i. */
export const ADDRESS_FLAGS = [
  "temporary", "nodad", "optimistic", "dadfailed", "homeaddress", "deprecated", "tentative", "permanent",
  "mngmtmpaddr", "noprefixroute", "mcautojoin", "stableprivacy",
];

export const IFA_F_PERMANENT = 0x80;

export function addressFlagsText(bits: number): string {
  return ADDRESS_FLAGS.filter((_, i) => bits & (1 << i)).join(",");
}

export const ROUTE_TYPES: Record<number, string> = {
  0: "unspec", 1: "unicast", 2: "local", 3: "broadcast", 4: "anycast", 5: "multicast", 6: "blackhole",
  7: "unreachable", 8: "prohibit", 9: "throw", 10: "nat", 11: "xresolve",
};
export const routeTypeName = named("RouteType", ROUTE_TYPES);

export const ROUTE_PROTOCOLS: Record<number, string> = {
  0: "unspec", 1: "redirect", 2: "kernel", 3: "boot", 4: "static", 9: "ra", 10: "mrt", 11: "zebra", 12: "bird",
  13: "dnrouted", 14: "xorp", 15: "ntk", 16: "dhcp", 17: "mrtd", 18: "keepalived", 42: "babel", 99: "openr",
  186: "bgp", 187: "isis", 188: "ospf", 189: "rip", 192: "eigrp",
};
export const routeProtocolName = named("RouteProtocol", ROUTE_PROTOCOLS);

/** Talos names tables 1–100 by number and only the reserved ones by word. */
export function routingTableName(n: number): string {
  if (n >= 1 && n <= 100) return String(n);
  return { 0: "unspec", 253: "default", 254: "main", 255: "local" }[n] ?? `RoutingTable(${n})`;
}
export const TABLE_MAIN = 254;

/** Route flags Talos prints (RTM_F_* from 0x100 up); lower RTNH_F_* bits exist but are never printed. */
export const ROUTE_FLAGS: Array<[number, string]> = [
  [0x100, "notify"], [0x200, "cloned"], [0x400, "equalize"], [0x800, "prefix"], [0x1000, "lookup_table"],
  [0x2000, "fib_match"], [0x4000, "offload"], [0x8000, "trap"],
];


export function routeFlagsText(bits: number): string {
  return ROUTE_FLAGS.filter(([bit]) => bits & bit).map(([, name]) => name).join(",");
}


/** sysfs duplex words → the text of Talos's Duplex enum. */
export const DUPLEX: Record<string, string> = { half: "Half", full: "Full", unknown: "Unknown" };
