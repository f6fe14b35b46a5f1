/**
 * Resources of the `network` namespace (`*.net.talos.dev`): what the kernel reports (statuses), what the
 * config asks for (specs), and what is derived from both (NodeAddress, NetworkStatus).
 *
 * Specs are YAML-shaped (keys in upstream struct order, enums and flags as text) and encoded to protobuf
 * with the generic encoder; the overrides below cover the YAML keys that differ from proto field names
 * and the enum texts that are not derivable from proto value names (talos-resource-api.md §3.2, §5).
 */
import {
  AddressSpecSpecSchema,
  AddressStatusSpecSchema,
  HostnameSpecSpecSchema,
  HostnameStatusSpecSchema,
  LinkRefreshSpecSchema,
  LinkSpecSpecSchema,
  LinkStatusSpecSchema,
  NodeAddressSpecSchema,
  ResolverSpecSpecSchema,
  ResolverStatusSpecSchema,
  RouteSpecSpecSchema,
  RouteStatusSpecSchema,
  StatusSpecSchema,
  TimeServerStatusSpecSchema,
} from "../../api/gen/resource/definitions/network/network_pb.js";
import { bitflags, specToProto, type FieldOverride, type SpecToProtoOptions } from "../protoenc.js";
import type { DescMessage } from "@bufbuild/protobuf";
import type { ResourceType } from "../resource.js";

export const NETWORK_NS = "network";

// ---- enum texts that proto value names cannot give (Talos prints enumer `-linecomment` names) ----

const ENUMS = "talos.resource.definitions.enums.";

/** Link types Talos names after the kernel's ARPHRD_* (iproute2-like), not after the proto value names. */
const LINK_TYPE_TEXT: Record<string, number> = {
  netrom: 0, ieee802: 6, tunnel: 768, ipip: 768, loopback: 772, "ip/ddp": 777, gre: 778, tr: 800,
  "ieee802.11": 801, "ieee802.11_prism": 802, "ieee802.11_radiotap": 803, "ieee802.15.4": 804,
  "ieee802.15.4_monitor": 805, phonet_pipe: 821, "6lowpan": 825, nohdr: 65534,
  ...Object.fromEntries(Array.from({ length: 13 }, (_, i) => [`fcfb_${i}`, 787 + i])),
};

const ENUM_TEXTS: SpecToProtoOptions["enums"] = {
  [`${ENUMS}NethelpersLinkType`]: LINK_TYPE_TEXT,
  [`${ENUMS}NethelpersDNSProtocol`]: { Do53: 0, DoT: 1, DoH: 2 },
  [`${ENUMS}NethelpersVLANProtocol`]: { "802.1q": 0x8100, "802.1ad": 0x88a8 },
  [`${ENUMS}NethelpersRoutingTable`]: { unspec: 0, default: 253, main: 254, local: 255 },
};

/** enumer prints values it has no name for as `TypeName(N)`; those go back as the number. */
const unnamed = (v: unknown): unknown => {
  const m = typeof v === "string" ? /^[A-Za-z]+\((-?\d+)\)$/.exec(v) : null;
  return m ? Number(m[1]) : v;
};

/** Bit names in bit order, as Talos joins them with ",". */
const bitsOf = (names: string[]): Record<string, number> => Object.fromEntries(names.map((n, i) => [n, 2 ** i]));

const LINK_FLAGS = bitsOf([
  "UP", "BROADCAST", "DEBUG", "LOOPBACK", "POINTTOPOINT", "NOTRAILERS", "RUNNING", "NOARP", "PROMISC", "ALLMULTI",
  "MASTER", "SLAVE", "MULTICAST", "PORTSEL", "AUTOMEDIA", "DYNAMIC", "LOWER_UP", "DORMANT", "ECHO",
]);
const ADDRESS_FLAGS = bitsOf([
  "temporary", "nodad", "optimistic", "dadfailed", "homeaddress", "deprecated", "tentative", "permanent",
  "mngmtmpaddr", "noprefixroute", "mcautojoin", "stableprivacy",
]);
const ROUTE_FLAGS: Record<string, number> = {
  notify: 0x100, cloned: 0x200, equalize: 0x400, prefix: 0x800, lookup_table: 0x1000, fib_match: 0x2000,
  offload: 0x4000, trap: 0x8000,
};

/** Every enum-valued YAML key may carry an unnamed `X(N)` value. */
const enumFields = (...keys: string[]): Record<string, FieldOverride> =>
  Object.fromEntries(keys.map((k) => [k, { encode: unnamed }]));

function encoder<S>(schema: DescMessage, fields: Record<string, FieldOverride | string> = {}): (spec: S) => Uint8Array {
  const opts: SpecToProtoOptions = { fields, enums: ENUM_TEXTS };
  return (spec) => specToProto(schema, spec, opts);
}

// ---- spec shapes (YAML keys, upstream order; optional = omitempty) ----

export type ConfigLayerName = "default" | "cmdline" | "platform" | "operator" | "configuration";

export interface LinkStatusSpec {
  alias?: string;
  altNames?: string[];
  index: number;
  type: string;
  linkIndex: number;
  flags: string;
  hardwareAddr: string;
  permanentAddr: string;
  broadcastAddr: string;
  mtu: number;
  queueDisc: string;
  masterIndex?: number;
  operationalState: string;
  kind: string;
  slaveKind: string;
  busPath?: string;
  pciID?: string;
  driver?: string;
  driverVersion?: string;
  firmwareVersion?: string;
  productID?: string;
  vendorID?: string;
  product?: string;
  vendor?: string;
  linkState: boolean;
  speedMbit?: number;
  port: string;
  duplex: string;
  vlan?: { vlanID: number; vlanProtocol: string };
  bridgeMaster?: { stp?: { enabled: boolean }; vlan?: { filteringEnabled: boolean } };
  vrfMaster?: { table: string };
  veth?: { peerName: string };
}

export interface AddressStatusSpec {
  address: string;
  local?: string;
  broadcast?: string;
  anycast?: string;
  multicast?: string;
  linkIndex: number;
  linkName: string;
  family: string;
  scope: string;
  flags: string;
  priority: number;
}

export interface RouteNextHop {
  gateway: string;
  outLinkName?: string;
  weight?: number;
}

export interface RouteStatusSpec {
  family: string;
  dst: string;
  src: string;
  gateway: string;
  outLinkIndex?: number;
  outLinkName?: string;
  table: string;
  priority: number;
  scope: string;
  type: string;
  flags: string;
  protocol: string;
  mtu?: number;
  nextHops?: RouteNextHop[];
}

export interface HostnameStatusSpec {
  hostname: string;
  domainname: string;
}

export interface HostnameSpecSpec extends HostnameStatusSpec {
  layer: ConfigLayerName;
}

export interface NameServer {
  addr: string;
  protocol: string;
  tlsServerName: string;
}

export interface ResolverStatusSpec {
  dnsServers: string[];
  nameServers?: NameServer[];
  searchDomains: string[];
}

export interface ResolverSpecSpec {
  dnsServers: string[];
  nameServers?: NameServer[];
  layer: ConfigLayerName;
  searchDomains?: string[];
  searchDomainsOverridden?: boolean;
}

export interface TimeServerStatusSpec {
  timeServers: string[];
  useNTS: boolean;
}

export interface NodeAddressSpec {
  addresses: string[];
  sortAlgorithm: "v1" | "v2";
}

export interface NetworkStatusSpec {
  addressReady: boolean;
  connectivityReady: boolean;
  hostnameReady: boolean;
  etcFilesReady: boolean;
}

export interface AddressSpecSpec {
  address: string;
  linkName: string;
  family: string;
  scope: string;
  flags: string;
  announceWithARP?: boolean;
  priority?: number;
  layer: ConfigLayerName;
}

export interface RouteSpecSpec {
  family: string;
  dst: string;
  src: string;
  gateway: string;
  outLinkName?: string;
  table: string;
  priority?: number;
  scope: string;
  type: string;
  flags: string;
  protocol: string;
  layer: ConfigLayerName;
  mtu?: number;
  nextHops?: RouteNextHop[];
}

export interface LinkSpecSpec {
  name: string;
  logical: boolean;
  up: boolean;
  mtu: number;
  kind: string;
  type: string;
  hardwareAddr?: string;
  parentName?: string;
  vlan?: { vlanID: number; vlanProtocol: string };
  layer: ConfigLayerName;
  multicast?: boolean;
}

export interface LinkRefreshSpec {
  generation: number;
}

// ---- resource types ----

export const LinkStatusType: ResourceType<LinkStatusSpec> = {
  type: "LinkStatuses.net.talos.dev",
  defaultNamespace: NETWORK_NS,
  aliases: ["link", "links"],
  printColumns: [
    { name: "Alias", jsonPath: "{.alias}" },
    { name: "Type", jsonPath: "{.type}" },
    { name: "Kind", jsonPath: "{.kind}" },
    { name: "Hw Addr", jsonPath: "{.hardwareAddr}" },
    { name: "Oper State", jsonPath: "{.operationalState}" },
    { name: "Link State", jsonPath: "{.linkState}" },
  ],
  toProto: encoder(LinkStatusSpecSchema, {
    ...enumFields("type", "operationalState", "port", "duplex", "vrfMaster.table"),
    flags: { encode: bitflags(LINK_FLAGS) },
    speedMbit: "speed_megabits",
    "vlan.vlanID": "vid",
    "vlan.vlanProtocol": { field: "protocol", encode: unnamed },
  }),
};

export const AddressStatusType: ResourceType<AddressStatusSpec> = {
  type: "AddressStatuses.net.talos.dev",
  defaultNamespace: NETWORK_NS,
  aliases: ["address", "addresses"],
  printColumns: [
    { name: "Address", jsonPath: "{.address}" },
    { name: "Link", jsonPath: "{.linkName}" },
  ],
  toProto: encoder(AddressStatusSpecSchema, { ...enumFields("family", "scope"), flags: { encode: bitflags(ADDRESS_FLAGS) } }),
};

const routeFields: Record<string, FieldOverride | string> = {
  ...enumFields("family", "table", "scope", "type", "protocol"),
  dst: "destination",
  src: "source",
  flags: { encode: bitflags(ROUTE_FLAGS) },
};

export const RouteStatusType: ResourceType<RouteStatusSpec> = {
  type: "RouteStatuses.net.talos.dev",
  defaultNamespace: NETWORK_NS,
  aliases: ["route", "routes"],
  printColumns: [
    { name: "Destination", jsonPath: "{.dst}" },
    { name: "Gateway", jsonPath: "{.gateway}" },
    { name: "Link", jsonPath: "{.outLinkName}" },
    { name: "Metric", jsonPath: "{.priority}" },
  ],
  toProto: encoder(RouteStatusSpecSchema, routeFields),
};

export const HostnameStatusType: ResourceType<HostnameStatusSpec> = {
  type: "HostnameStatuses.net.talos.dev",
  defaultNamespace: NETWORK_NS,
  aliases: ["hostname"],
  printColumns: [
    { name: "Hostname", jsonPath: "{.hostname}" },
    { name: "Domainname", jsonPath: "{.domainname}" },
  ],
  toProto: encoder(HostnameStatusSpecSchema),
};

export const HostnameSpecType: ResourceType<HostnameSpecSpec> = {
  type: "HostnameSpecs.net.talos.dev",
  defaultNamespace: NETWORK_NS,
  toProto: encoder(HostnameSpecSpecSchema, { layer: "config_layer" }),
};

export const ResolverStatusType: ResourceType<ResolverStatusSpec> = {
  type: "ResolverStatuses.net.talos.dev",
  defaultNamespace: NETWORK_NS,
  aliases: ["resolvers"],
  printColumns: [
    { name: "Resolvers", jsonPath: "{.dnsServers}" },
    { name: "Search Domains", jsonPath: "{.searchDomains}" },
  ],
  toProto: encoder(ResolverStatusSpecSchema),
};

export const ResolverSpecType: ResourceType<ResolverSpecSpec> = {
  type: "ResolverSpecs.net.talos.dev",
  defaultNamespace: NETWORK_NS,
  printColumns: [
    { name: "Layer", jsonPath: "{.layer}" },
    { name: "Resolvers", jsonPath: "{.dnsServers}" },
    { name: "Search Domains", jsonPath: "{.searchDomains}" },
  ],
  toProto: encoder(ResolverSpecSpecSchema, { layer: "config_layer" }),
};

export const TimeServerStatusType: ResourceType<TimeServerStatusSpec> = {
  type: "TimeServerStatuses.net.talos.dev",
  defaultNamespace: NETWORK_NS,
  aliases: ["timeserver", "timeservers"],
  printColumns: [
    { name: "Timeservers", jsonPath: "{.timeServers}" },
    { name: "UseNTS", jsonPath: "{.useNTS}" },
  ],
  toProto: encoder(TimeServerStatusSpecSchema, { timeServers: "ntp_servers", useNTS: "use_nts" }),
};

export const NodeAddressType: ResourceType<NodeAddressSpec> = {
  type: "NodeAddresses.net.talos.dev",
  defaultNamespace: NETWORK_NS,
  printColumns: [
    { name: "Addresses", jsonPath: "{.addresses}" },
    { name: "SortAlgorithm", jsonPath: "{.sortAlgorithm}" },
  ],
  toProto: encoder(NodeAddressSpecSchema),
};

export const NetworkStatusType: ResourceType<NetworkStatusSpec> = {
  type: "NetworkStatuses.net.talos.dev",
  defaultNamespace: NETWORK_NS,
  aliases: ["netstatus", "netstatuses"],
  printColumns: [
    { name: "Address", jsonPath: "{.addressReady}" },
    { name: "Connectivity", jsonPath: "{.connectivityReady}" },
    { name: "Hostname", jsonPath: "{.hostnameReady}" },
    { name: "Etc", jsonPath: "{.etcFilesReady}" },
  ],
  toProto: encoder(StatusSpecSchema),
};

export const AddressSpecType: ResourceType<AddressSpecSpec> = {
  type: "AddressSpecs.net.talos.dev",
  defaultNamespace: NETWORK_NS,
  toProto: encoder(AddressSpecSpecSchema, {
    ...enumFields("family", "scope"),
    flags: { encode: bitflags(ADDRESS_FLAGS) },
    layer: "config_layer",
  }),
};

export const RouteSpecType: ResourceType<RouteSpecSpec> = {
  type: "RouteSpecs.net.talos.dev",
  defaultNamespace: NETWORK_NS,
  toProto: encoder(RouteSpecSpecSchema, { ...routeFields, layer: "config_layer" }),
};

export const LinkSpecType: ResourceType<LinkSpecSpec> = {
  type: "LinkSpecs.net.talos.dev",
  defaultNamespace: NETWORK_NS,
  toProto: encoder(LinkSpecSpecSchema, {
    ...enumFields("type"),
    hardwareAddr: "hardware_address",
    layer: "config_layer",
    "vlan.vlanID": "vid",
    "vlan.vlanProtocol": { field: "protocol", encode: unnamed },
  }),
};

/** Upstream's "please look at the links again" signal; our apply controllers bump it after changing the kernel. */
export const LinkRefreshType: ResourceType<LinkRefreshSpec> = {
  type: "LinkRefreshes.net.talos.dev",
  defaultNamespace: NETWORK_NS,
  toProto: encoder(LinkRefreshSpecSchema),
};

export const NETWORK_TYPES: ResourceType[] = [
  LinkStatusType, AddressStatusType, RouteStatusType, HostnameStatusType, HostnameSpecType, ResolverStatusType,
  ResolverSpecType, TimeServerStatusType, NodeAddressType, NetworkStatusType, AddressSpecType, RouteSpecType,
  LinkSpecType, LinkRefreshType,
] as ResourceType[];

/** Registers every network resource type (the `network` namespace itself is registered with the others). */
export function registerNetworkTypes(registry: { register<S>(t: ResourceType<S>): unknown }): void {
  for (const t of NETWORK_TYPES) registry.register(t);
}

/** Ids of the NodeAddress resources (upstream's filtered views of the node's addresses). */
export const NODE_ADDRESS = {
  default: "default",
  current: "current",
  routed: "routed",
  accumulative: "accumulative",
  currentNoK8s: "current-no-k8s",
  routedNoK8s: "routed-no-k8s",
  accumulativeNoK8s: "accumulative-no-k8s",
} as const;
export const HOSTNAME_ID = "hostname";
export const NETWORK_STATUS_ID = "status";

/** Addresses of a NodeAddress spec without prefix lengths. */
export function nodeAddressIPs(spec: Pick<NodeAddressSpec, "addresses"> | undefined): string[] {
  return (spec?.addresses ?? []).map((p) => p.split("/")[0]);
}

/** The node's fully qualified name from its HostnameStatus. */
export function fqdn(hs: Pick<HostnameStatusSpec, "hostname" | "domainname">): string {
  return hs.domainname ? `${hs.hostname}.${hs.domainname}` : hs.hostname;
}
