/** RD data and proto encoding of the network resource types (decoded back with fromBinary). */
import { fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  NethelpersDNSProtocol,
  NethelpersFamily,
  NethelpersLinkType,
  NethelpersOperationalState,
  NethelpersRouteProtocol,
  NethelpersRoutingTable,
  NethelpersScope,
  NethelpersVLANProtocol,
  NetworkConfigLayer,
  NethelpersAddressSortAlgorithm,
  NethelpersPort,
  NethelpersDuplex,
} from "../../../src/machinery/api/gen/resource/definitions/enums/enums_pb.js";
import {
  AddressSpecSpecSchema,
  AddressStatusSpecSchema,
  HostnameSpecSpecSchema,
  HostnameStatusSpecSchema,
  LinkSpecSpecSchema,
  LinkStatusSpecSchema,
  NodeAddressSpecSchema,
  ResolverSpecSpecSchema,
  ResolverStatusSpecSchema,
  RouteSpecSpecSchema,
  RouteStatusSpecSchema,
  StatusSpecSchema,
  TimeServerStatusSpecSchema,
  LinkRefreshSpecSchema,
} from "../../../src/machinery/api/gen/resource/definitions/network/network_pb.js";
import { resourceDefinitionSpec } from "../../../src/machinery/resources/definitions.js";
import { TypeRegistry } from "../../../src/machinery/resources/registry.js";
import { specYaml } from "../../../src/machinery/resources/render.js";
import * as T from "../../../src/machinery/resources/types/network.js";
import { LINK_TYPES, OPER_STATES, ROUTE_PROTOCOLS, ROUTE_TYPES, SCOPES, routingTableName } from "../../../src/host/net/names.js";

const bytes = (...b: number[]) => new Uint8Array(b);

describe("network resource definitions", () => {
  const rd = (t: { type: string; defaultNamespace: string }) => resourceDefinitionSpec(t).spec;

  it("registers every type once, all in the network namespace", () => {
    const reg = new TypeRegistry();
    T.registerNetworkTypes(reg);
    const types = reg.all().map((t) => t.type);
    expect(types).toEqual(expect.arrayContaining([
      "LinkStatuses.net.talos.dev", "AddressStatuses.net.talos.dev", "RouteStatuses.net.talos.dev",
      "HostnameStatuses.net.talos.dev", "HostnameSpecs.net.talos.dev", "ResolverStatuses.net.talos.dev",
      "TimeServerStatuses.net.talos.dev", "NodeAddresses.net.talos.dev", "NetworkStatuses.net.talos.dev",
      "AddressSpecs.net.talos.dev", "RouteSpecs.net.talos.dev", "LinkSpecs.net.talos.dev", "ResolverSpecs.net.talos.dev",
    ]));
    expect(reg.all().every((t) => t.defaultNamespace === "network")).toBe(true);
    expect(() => T.registerNetworkTypes(reg)).toThrow(/registered twice/);
  });

  it("has the §3.1 aliases and print columns", () => {
    const links = rd(T.LinkStatusType);
    expect(links.displayType).toBe("LinkStatus");
    expect(links.aliases).toEqual(["link", "links", "linkstatus", "ls"]);
    expect(links.printColumns.map((c) => `${c.name}=${c.jsonPath}`)).toEqual([
      "Alias={.alias}", "Type={.type}", "Kind={.kind}", "Hw Addr={.hardwareAddr}", "Oper State={.operationalState}", "Link State={.linkState}",
    ]);
    expect(rd(T.AddressStatusType).aliases).toEqual(["address", "addresses", "addressstatus", "as"]);
    expect(rd(T.RouteStatusType).aliases).toEqual(["route", "routes", "routestatus", "rs"]);
    expect(rd(T.RouteStatusType).printColumns.map((c) => c.jsonPath)).toEqual(["{.dst}", "{.gateway}", "{.outLinkName}", "{.priority}"]);
    expect(rd(T.HostnameStatusType).aliases).toEqual(["hostname", "hostnamestatus", "hs"]);
    expect(rd(T.NodeAddressType).aliases).toEqual(["nodeaddress", "na", "nas"]);
    expect(rd(T.ResolverStatusType).aliases).toEqual(["resolvers", "resolverstatus", "rs"]);
    expect(rd(T.TimeServerStatusType).aliases).toEqual(["timeserver", "timeservers", "timeserverstatus", "tss"]);
    expect(rd(T.TimeServerStatusType).printColumns).toEqual([
      { name: "Timeservers", jsonPath: "{.timeServers}" },
      { name: "UseNTS", jsonPath: "{.useNTS}" },
    ]);
    const ns = rd(T.NetworkStatusType);
    expect(ns.displayType).toBe("NetworkStatus");
    expect(ns.aliases).toEqual(["netstatus", "netstatuses", "networkstatus", "ns"]);
    expect(ns.printColumns.map((c) => c.name)).toEqual(["Address", "Connectivity", "Hostname", "Etc"]);
    expect(rd(T.ResolverSpecType).printColumns.map((c) => c.name)).toEqual(["Layer", "Resolvers", "Search Domains"]);
    expect(rd(T.AddressSpecType).displayType).toBe("AddressSpec");
    expect(rd(T.LinkRefreshType).displayType).toBe("LinkRefresh");
  });
});

describe("network spec encoding", () => {
  it("LinkStatus: enums with irregular texts, flags, MAC bytes, renamed fields", () => {
    const spec: T.LinkStatusSpec = {
      index: 3, type: "loopback", linkIndex: 0, flags: "UP,LOOPBACK,RUNNING,LOWER_UP", hardwareAddr: "00:00:00:00:00:00",
      permanentAddr: "", broadcastAddr: "00:00:00:00:00:00", mtu: 65536, queueDisc: "noqueue", operationalState: "unknown",
      kind: "", slaveKind: "", linkState: true, speedMbit: 1000, port: "Other", duplex: "Unknown",
      vlan: { vlanID: 100, vlanProtocol: "802.1ad" }, vrfMaster: { table: "RoutingTable(300)" }, veth: { peerName: "veth1" },
    };
    const m = fromBinary(LinkStatusSpecSchema, T.LinkStatusType.toProto(spec));
    expect(m.index).toBe(3);
    expect(m.type).toBe(NethelpersLinkType.LINK_LOOPBCK);
    expect(m.flags).toBe(1 | 8 | 64 | 65536);
    expect(m.hardwareAddr).toEqual(bytes(0, 0, 0, 0, 0, 0));
    expect(m.mtu).toBe(65536);
    expect(m.operationalState).toBe(NethelpersOperationalState.OPER_STATE_UNKNOWN);
    expect(m.speedMegabits).toBe(1000n);
    expect(m.port).toBe(NethelpersPort.OTHER);
    expect(m.duplex).toBe(NethelpersDuplex.UNKNOWN);
    expect(m.vlan?.vid).toBe(100);
    expect(m.vlan?.protocol).toBe(NethelpersVLANProtocol.VLAN_PROTOCOL8021_AD);
    expect(m.vrfMaster?.table).toBe(300);
    expect(m.veth?.peerName).toBe("veth1");
  });

  it("every link type, scope, route type, protocol, table and oper state text Talos prints encodes to its number", () => {
    const link = (type: string) => fromBinary(LinkStatusSpecSchema, T.LinkStatusType.toProto({ type } as T.LinkStatusSpec)).type;
    for (const [n, text] of Object.entries(LINK_TYPES)) expect([text, link(text)]).toEqual([text, Number(n)]);
    expect(link("LinkType(4242)")).toBe(4242);
    const oper = (s: string) => fromBinary(LinkStatusSpecSchema, T.LinkStatusType.toProto({ operationalState: s } as T.LinkStatusSpec)).operationalState;
    for (const [n, text] of Object.entries(OPER_STATES)) expect(oper(text)).toBe(Number(n));
    const route = (spec: Partial<T.RouteStatusSpec>) => fromBinary(RouteStatusSpecSchema, T.RouteStatusType.toProto(spec as T.RouteStatusSpec));
    for (const [n, text] of Object.entries(SCOPES)) expect(route({ scope: text }).scope).toBe(Number(n));
    for (const [n, text] of Object.entries(ROUTE_TYPES)) expect(route({ type: text }).type).toBe(Number(n));
    for (const [n, text] of Object.entries(ROUTE_PROTOCOLS)) expect(route({ protocol: text }).protocol).toBe(Number(n));
    for (const n of [0, 1, 42, 100, 200, 253, 254, 255]) expect(route({ table: routingTableName(n) }).table).toBe(n);
  });

  it("AddressStatus and AddressSpec: prefix bytes, flags bitmask, layer", () => {
    const st = fromBinary(AddressStatusSpecSchema, T.AddressStatusType.toProto({
      address: "fd00::2/64", linkIndex: 2, linkName: "veth0", family: "inet6", scope: "global", flags: "permanent,tentative", priority: 256,
    }));
    expect(st.address?.ip).toEqual(bytes(0xfd, 0, ...Array(13).fill(0), 2));
    expect(st.address?.prefixLength).toBe(64);
    expect(st.flags).toBe(0x80 | 0x40);
    expect(st.family).toBe(NethelpersFamily.FAMILY_INET6);
    const sp = fromBinary(AddressSpecSpecSchema, T.AddressSpecType.toProto({
      address: "10.250.0.2/24", linkName: "veth0", family: "inet4", scope: "host", flags: "permanent", layer: "configuration",
    }));
    expect(sp.address?.ip).toEqual(bytes(10, 250, 0, 2));
    expect(sp.linkName).toBe("veth0");
    expect(sp.scope).toBe(NethelpersScope.SCOPE_HOST);
    expect(sp.flags).toBe(0x80);
    expect(sp.configLayer).toBe(NetworkConfigLayer.CONFIG_MACHINE_CONFIGURATION);
  });

  it("RouteStatus and RouteSpec: dst/src renames, empty dst is the zero prefix, numbering differs", () => {
    const st = fromBinary(RouteStatusSpecSchema, T.RouteStatusType.toProto({
      family: "inet4", dst: "", src: "", gateway: "10.250.0.1", outLinkIndex: 2, outLinkName: "veth0", table: "main",
      priority: 1024, scope: "global", type: "unicast", flags: "", protocol: "static", mtu: 1400,
    }));
    expect(st.destination?.prefixLength).toBe(-1);
    expect(st.gateway?.ip).toEqual(bytes(10, 250, 0, 1));
    expect(st.outLinkIndex).toBe(2);
    expect(st.table).toBe(NethelpersRoutingTable.TABLE_MAIN);
    expect(st.protocol).toBe(NethelpersRouteProtocol.PROTOCOL_STATIC);
    expect(st.mtu).toBe(1400);
    const sp = fromBinary(RouteSpecSpecSchema, T.RouteSpecType.toProto({
      family: "inet6", dst: "fd00:1::/64", src: "fd00::2", gateway: "", outLinkName: "veth0", table: "local", priority: 10,
      scope: "link", type: "unicast", flags: "cloned", protocol: "dhcp", layer: "operator", nextHops: [{ gateway: "fd00::1", weight: 2 }],
    }));
    expect(sp.family).toBe(NethelpersFamily.FAMILY_INET6);
    expect(sp.destination?.prefixLength).toBe(64);
    expect(sp.source?.ip.length).toBe(16);
    expect(sp.outLinkName).toBe("veth0");
    expect(sp.table).toBe(NethelpersRoutingTable.TABLE_LOCAL);
    expect(sp.priority).toBe(10);
    expect(sp.flags).toBe(0x200);
    expect(sp.protocol).toBe(NethelpersRouteProtocol.PROTOCOL_DHCP);
    expect(sp.configLayer).toBe(NetworkConfigLayer.CONFIG_OPERATOR);
    expect(sp.nextHops[0].weight).toBe(2);
  });

  it("hostname, resolver, time server, node address, status, link spec, link refresh", () => {
    expect(fromBinary(HostnameStatusSpecSchema, T.HostnameStatusType.toProto({ hostname: "a", domainname: "b.c" }))).toMatchObject({ hostname: "a", domainname: "b.c" });
    expect(fromBinary(HostnameSpecSpecSchema, T.HostnameSpecType.toProto({ hostname: "a", domainname: "", layer: "default" })).configLayer).toBe(NetworkConfigLayer.CONFIG_DEFAULT);
    const rs = fromBinary(ResolverStatusSpecSchema, T.ResolverStatusType.toProto({
      dnsServers: ["1.1.1.1"], nameServers: [{ addr: "1.1.1.1", protocol: "DoT", tlsServerName: "one" }], searchDomains: ["x.org"],
    }));
    expect(rs.dnsServers[0].ip).toEqual(bytes(1, 1, 1, 1));
    expect(rs.nameServers[0].protocol).toBe(NethelpersDNSProtocol.DNS_PROTOCOL_DNS_OVER_TLS);
    expect(rs.searchDomains).toEqual(["x.org"]);
    const rsp = fromBinary(ResolverSpecSpecSchema, T.ResolverSpecType.toProto({
      dnsServers: ["8.8.8.8"], nameServers: [{ addr: "8.8.8.8", protocol: "Do53", tlsServerName: "" }], layer: "configuration", searchDomainsOverridden: true,
    }));
    expect(rsp.configLayer).toBe(NetworkConfigLayer.CONFIG_MACHINE_CONFIGURATION);
    expect(rsp.nameServers[0].protocol).toBe(NethelpersDNSProtocol.DNS_PROTOCOL_DEFAULT);
    expect(rsp.searchDomainsOverridden).toBe(true);
    const ts = fromBinary(TimeServerStatusSpecSchema, T.TimeServerStatusType.toProto({ timeServers: ["time.cloudflare.com"], useNTS: true }));
    expect(ts.ntpServers).toEqual(["time.cloudflare.com"]);
    expect(ts.useNts).toBe(true);
    const na = fromBinary(NodeAddressSpecSchema, T.NodeAddressType.toProto({ addresses: ["10.250.0.2/24", "fd00::2/64"], sortAlgorithm: "v2" }));
    expect(na.addresses.map((p) => p.prefixLength)).toEqual([24, 64]);
    expect(na.sortAlgorithm).toBe(NethelpersAddressSortAlgorithm.ADDRESS_SORT_ALGORITHM_V2);
    const st = fromBinary(StatusSpecSchema, T.NetworkStatusType.toProto({ addressReady: true, connectivityReady: false, hostnameReady: true, etcFilesReady: true }));
    expect([st.addressReady, st.connectivityReady, st.hostnameReady, st.etcFilesReady]).toEqual([true, false, true, true]);
    const ls = fromBinary(LinkSpecSpecSchema, T.LinkSpecType.toProto({
      name: "veth0.5", logical: true, up: true, mtu: 1400, kind: "vlan", type: "ether", hardwareAddr: "aa:bb:cc:dd:ee:ff",
      parentName: "veth0", vlan: { vlanID: 5, vlanProtocol: "802.1q" }, layer: "configuration",
    }));
    expect(ls).toMatchObject({ name: "veth0.5", logical: true, up: true, mtu: 1400, kind: "vlan", parentName: "veth0" });
    expect(ls.type).toBe(NethelpersLinkType.LINK_ETHER);
    expect(ls.hardwareAddress).toEqual(bytes(0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff));
    expect(ls.vlan?.vid).toBe(5);
    expect(ls.vlan?.protocol).toBe(NethelpersVLANProtocol.VLAN_PROTOCOL8021_Q);
    expect(fromBinary(LinkRefreshSpecSchema, T.LinkRefreshType.toProto({ generation: 7 })).generation).toBe(7n);
  });

  it("renders YAML with upstream keys in order", () => {
    expect(specYaml(T.TimeServerStatusType, { timeServers: ["time.cloudflare.com"], useNTS: false })).toBe(
      "timeServers:\n    - time.cloudflare.com\nuseNTS: false\n",
    );
    expect(specYaml(T.NodeAddressType, { addresses: [], sortAlgorithm: "v1" })).toBe("addresses: []\nsortAlgorithm: v1\n");
  });
});
