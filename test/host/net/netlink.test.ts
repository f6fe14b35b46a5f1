/**
 * The rtnetlink decoding and the spec conversion, from messages built here byte by byte the way the
 * kernel lays them out (the live test checks the same code against a real kernel and iproute2).
 */
import { describe, expect, it } from "vitest";
import {
  RTM_DELADDR, RTM_NEWLINK, RTM_NEWROUTE, addressSpecs, attrList, decodeAddress, decodeLink, decodeRoute, dumpRequest,
  errorCode, ipText, kindsOf, linkSpecs, routeSpecs, splitMessages, type NlLink,
} from "../../../src/host/net/index.js";

// ------------------------------------------------------------------------------- message construction

const pad4 = (b: Buffer) => Buffer.concat([b, Buffer.alloc((4 - (b.length % 4)) % 4)]);
function attr(type: number, data: Buffer | string | number[]): Buffer {
  const payload = typeof data === "string" ? Buffer.from(`${data}\0`) : Array.isArray(data) ? Buffer.from(data) : data;
  const h = Buffer.alloc(4);
  h.writeUInt16LE(4 + payload.length, 0);
  h.writeUInt16LE(type, 2);
  return pad4(Buffer.concat([h, payload]));
}
const nested = (type: number, ...children: Buffer[]) => attr(type | 0x8000, Buffer.concat(children));
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0, 0);
  return b;
};
const u16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(n, 0);
  return b;
};
const be16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n, 0);
  return b;
};
const ip4 = (s: string) => Buffer.from(s.split(".").map(Number));
function ip6(s: string): Buffer {
  const [h, t = ""] = s.split("::");
  const head = h ? h.split(":") : [];
  const tail = s.includes("::") && t ? t.split(":") : [];
  const words = [...head, ...Array<string>(8 - head.length - tail.length).fill("0"), ...tail];
  const b = Buffer.alloc(16);
  words.forEach((w, i) => b.writeUInt16BE(Number.parseInt(w, 16), i * 2));
  return b;
}
const mac = (s: string) => Buffer.from(s.split(":").map((x) => Number.parseInt(x, 16)));

function ifinfomsg(o: { index: number; type?: number; flags: number }, ...attrs: Buffer[]): Buffer {
  const h = Buffer.alloc(16);
  h.writeUInt16LE(o.type ?? 1, 2);
  h.writeInt32LE(o.index, 4);
  h.writeUInt32LE(o.flags, 8);
  return Buffer.concat([h, ...attrs]);
}
function ifaddrmsg(o: { family: number; prefix: number; flags?: number; scope?: number; index: number }, ...attrs: Buffer[]): Buffer {
  const h = Buffer.alloc(8);
  h.writeUInt8(o.family, 0);
  h.writeUInt8(o.prefix, 1);
  h.writeUInt8(o.flags ?? 0x80, 2);
  h.writeUInt8(o.scope ?? 0, 3);
  h.writeUInt32LE(o.index, 4);
  return Buffer.concat([h, ...attrs]);
}
function rtmsg(o: { family: number; dstLen: number; table?: number; protocol?: number; scope?: number; type?: number; flags?: number }, ...attrs: Buffer[]): Buffer {
  const h = Buffer.alloc(12);
  h.writeUInt8(o.family, 0);
  h.writeUInt8(o.dstLen, 1);
  h.writeUInt8(o.table ?? 254, 4);
  h.writeUInt8(o.protocol ?? 3, 5);
  h.writeUInt8(o.scope ?? 0, 6);
  h.writeUInt8(o.type ?? 1, 7);
  h.writeUInt32LE(o.flags ?? 0, 8);
  return Buffer.concat([h, ...attrs]);
}
function nlmsg(type: number, body: Buffer, seq = 1): Buffer {
  const h = Buffer.alloc(16);
  h.writeUInt32LE(16 + body.length, 0);
  h.writeUInt16LE(type, 4);
  h.writeUInt16LE(2, 6);
  h.writeUInt32LE(seq, 8);
  return pad4(Buffer.concat([h, body]));
}

// IFF_* bits
const UP = 0x1, BROADCAST = 0x2, LOOPBACK = 0x8, RUNNING = 0x40, MULTICAST = 0x1000, LOWER_UP = 0x10000;

const LO = decodeLink(ifinfomsg({ index: 1, type: 772, flags: UP | LOOPBACK | RUNNING | LOWER_UP },
  attr(3, "lo"), attr(1, mac("00:00:00:00:00:00")), attr(2, mac("00:00:00:00:00:00")), attr(4, u32(65536)), attr(6, "noqueue"), attr(16, [0])))!;
const VB = decodeLink(ifinfomsg({ index: 2, flags: UP | BROADCAST | RUNNING | MULTICAST | LOWER_UP },
  attr(3, "vb"), attr(1, mac("5a:f7:ef:ef:d4:3c")), attr(2, mac("ff:ff:ff:ff:ff:ff")), attr(4, u32(1500)), attr(5, u32(3)), attr(6, "noqueue"),
  attr(10, u32(4)), attr(16, [6]), nested(18, attr(1, "veth"), attr(4, "bridge"))))!;
const VA = decodeLink(ifinfomsg({ index: 3, flags: UP | BROADCAST | RUNNING | MULTICAST | LOWER_UP },
  attr(3, "va"), attr(1, mac("a2:e0:94:f2:b7:34")), attr(2, mac("ff:ff:ff:ff:ff:ff")), attr(4, u32(1500)), attr(5, u32(2)), attr(6, "noqueue"),
  attr(16, [6]), attr(20, "uplink"), nested(52, attr(53, "uplink0")), attr(54, mac("02:00:00:00:00:33")), nested(18, attr(1, "veth"))))!;
const BR = decodeLink(ifinfomsg({ index: 4, flags: UP | BROADCAST | RUNNING | MULTICAST | LOWER_UP },
  attr(3, "br0"), attr(1, mac("5a:f7:ef:ef:d4:3c")), attr(4, u32(1500)), attr(16, [6]), nested(18, attr(1, "bridge"), nested(2, attr(5, u32(0)), attr(7, [0])))))!;
const LINKS: NlLink[] = [LO, VB, VA, BR];

describe("rtnetlink framing", () => {
  it("splits a datagram into aligned messages and drops a truncated tail", () => {
    const a = nlmsg(RTM_NEWLINK, Buffer.from([1, 2, 3]), 7);
    const b = nlmsg(RTM_NEWROUTE, Buffer.alloc(12), 8);
    const msgs = splitMessages(Buffer.concat([a, b, b.subarray(0, 10)]));
    expect(msgs.map((m) => [m.type, m.seq, m.body.length])).toEqual([[RTM_NEWLINK, 7, 3], [RTM_NEWROUTE, 8, 12]]);
  });

  it("builds dump requests and reads NLMSG_ERROR codes", () => {
    const req = dumpRequest(18, 0, 16, 42);
    expect(req.length).toBe(32);
    expect([req.readUInt32LE(0), req.readUInt16LE(4), req.readUInt16LE(6), req.readUInt32LE(8)]).toEqual([32, 18, 0x301, 42]);
    const err = Buffer.alloc(20);
    err.writeInt32LE(-97, 0);
    expect(errorCode(err)).toBe(97);
  });

  it("masks the nested flag off attribute types and keeps repeats in order", () => {
    const list = attrList(Buffer.concat([nested(52, attr(53, "a"), attr(53, "b"))]));
    expect(list.map(([t]) => t)).toEqual([52]);
    expect(attrList(list[0][1]).map(([t, v]) => [t, v.toString().replace(/\0.*/, "")])).toEqual([[53, "a"], [53, "b"]]);
  });

  it("tells which observations a notification invalidates", () => {
    expect(kindsOf(RTM_NEWLINK)).toEqual(["links", "addresses", "routes"]);
    expect(kindsOf(RTM_DELADDR)).toEqual(["addresses"]);
    expect(kindsOf(RTM_NEWROUTE)).toEqual(["routes"]);
    expect(kindsOf(3)).toEqual([]);
  });
});

describe("addresses as text (inet_ntop)", () => {
  it.each([
    ["10.250.1.1", "10.250.1.1"],
    ["fe80::a0e0:94ff:fef2:b734", "fe80::a0e0:94ff:fef2:b734"],
    ["::", "::"],
    ["::1", "::1"],
    ["fd00::", "fd00::"],
    ["ff00::", "ff00::"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
    ["2001:db8:0:1:0:0:0:1", "2001:db8:0:1::1"],
    ["1:0:2:0:3:0:4:0", "1:0:2:0:3:0:4:0"],
    ["::ffff:a0a:101", "::ffff:10.10.1.1"],
  ])("%s → %s", (input, text) => {
    expect(ipText(input.includes(":") ? ip6(input) : ip4(input))).toBe(text);
  });
});

describe("LinkStatus from RTM_NEWLINK", () => {
  const byId = Object.fromEntries(linkSpecs(LINKS).map((l) => [l.id, l.spec]));

  it("renders loopback like Talos, keys in upstream order", () => {
    expect(byId.lo).toEqual({
      index: 1, type: "loopback", linkIndex: 0, flags: "UP,LOOPBACK,RUNNING,LOWER_UP", hardwareAddr: "00:00:00:00:00:00",
      permanentAddr: "", broadcastAddr: "00:00:00:00:00:00", mtu: 65536, queueDisc: "noqueue", operationalState: "unknown",
      kind: "", slaveKind: "", linkState: true, port: "Other", duplex: "Unknown",
    });
    expect(Object.keys(byId.lo)).toEqual([
      "index", "type", "linkIndex", "flags", "hardwareAddr", "permanentAddr", "broadcastAddr", "mtu", "queueDisc",
      "operationalState", "kind", "slaveKind", "linkState", "port", "duplex",
    ]);
  });

  it("describes veth peers, alias, altnames, the permanent address and bridge membership", () => {
    expect(byId.va).toMatchObject({
      alias: "uplink", altNames: ["uplink0"], index: 3, type: "ether", linkIndex: 2, kind: "veth", permanentAddr: "02:00:00:00:00:33",
      flags: "UP,BROADCAST,RUNNING,MULTICAST,LOWER_UP", operationalState: "up", veth: { peerName: "vb" },
    });
    expect(Object.keys(byId.va)[0]).toBe("alias");
    expect(byId.vb).toMatchObject({ masterIndex: 4, slaveKind: "bridge", veth: { peerName: "va" } });
    // STP and VLAN filtering are off, so upstream omits bridgeMaster entirely.
    expect(byId.br0).toMatchObject({ kind: "bridge", hardwareAddr: byId.vb.hardwareAddr, broadcastAddr: "" });
    expect(byId.br0.bridgeMaster).toBeUndefined();
  });

  it("reports no permanent address when it equals the current one, and no peer across namespaces", () => {
    const same = decodeLink(ifinfomsg({ index: 7, flags: UP }, attr(3, "eth0"), attr(1, mac("02:00:00:00:00:07")), attr(54, mac("02:00:00:00:00:07"))))!;
    const away = decodeLink(ifinfomsg({ index: 8, flags: UP }, attr(3, "vx"), attr(5, u32(3)), attr(37, u32(0)), nested(18, attr(1, "veth"))))!;
    const [eth, vx] = linkSpecs([same, away, VA]).map((l) => l.spec);
    expect(eth.permanentAddr).toBe("");
    expect(vx.linkIndex).toBe(3);
    expect(vx.veth).toBeUndefined();
  });

  it("decodes VLAN, STP-enabled bridge and VRF details", () => {
    const vlan = decodeLink(ifinfomsg({ index: 5, flags: UP }, attr(3, "eth0.10"), attr(5, u32(3)), nested(18, attr(1, "vlan"), nested(2, attr(1, u16(10)), attr(5, be16(0x88a8))))))!;
    const br = decodeLink(ifinfomsg({ index: 6, flags: UP }, attr(3, "br1"), nested(18, attr(1, "bridge"), nested(2, attr(5, u32(1)), attr(7, [1])))))!;
    const vrf = decodeLink(ifinfomsg({ index: 9, flags: UP }, attr(3, "vrf1"), nested(18, attr(1, "vrf"), nested(2, attr(1, u32(1001))))))!;
    const [v, b, r] = linkSpecs([vlan, br, vrf]).map((l) => l.spec);
    expect(v.vlan).toEqual({ vlanID: 10, vlanProtocol: "802.1ad" });
    expect(b.bridgeMaster).toEqual({ stp: { enabled: true }, vlan: { filteringEnabled: true } });
    expect(r.vrfMaster).toEqual({ table: "RoutingTable(1001)" });
  });

  it("prints tunnel endpoints as raw bytes and unknown kernel numbers the way enumer does", () => {
    const sit = decodeLink(ifinfomsg({ index: 10, type: 776, flags: 0 }, attr(3, "sit0"), attr(1, ip4("10.0.0.1")), attr(16, [9])))!;
    const [spec] = linkSpecs([sit]).map((l) => l.spec);
    expect(spec).toMatchObject({ type: "sit", hardwareAddr: "0a:00:00:01", flags: "", operationalState: "OperationalState(9)", linkState: false });
  });
});

describe("AddressStatus from RTM_NEWADDR", () => {
  const ADDRS = [
    decodeAddress(ifaddrmsg({ family: 2, prefix: 8, scope: 254, index: 1 }, attr(1, ip4("127.0.0.1")), attr(2, ip4("127.0.0.1")), attr(3, "lo")))!,
    decodeAddress(ifaddrmsg({ family: 2, prefix: 24, index: 3 }, attr(1, ip4("10.250.1.1")), attr(2, ip4("10.250.1.1")), attr(4, ip4("10.250.1.255"))))!,
    decodeAddress(ifaddrmsg({ family: 2, prefix: 32, index: 3 }, attr(1, ip4("10.250.2.2")), attr(2, ip4("10.250.2.1"))))!,
    decodeAddress(ifaddrmsg({ family: 10, prefix: 128, scope: 254, index: 1 }, attr(1, ip6("::1"))))!,
    decodeAddress(ifaddrmsg({ family: 10, prefix: 64, flags: 0x82, index: 3 }, attr(1, ip6("fd00:250::1")), attr(8, u32(0x82)), attr(9, u32(256))))!,
    decodeAddress(ifaddrmsg({ family: 10, prefix: 64, flags: 0, scope: 253, index: 3 }, attr(1, ip6("fe80::a0e0:94ff:fef2:b734")), attr(8, u32(0x800))))!,
    decodeAddress(ifaddrmsg({ family: 10, prefix: 128, index: 3 }, attr(1, ip6("fd00:251::2")), attr(2, ip6("fd00:251::1"))))!,
    // An address on a link the dump does not know is dropped, as iproute2 (grouping by link) drops it.
    decodeAddress(ifaddrmsg({ family: 2, prefix: 24, index: 99 }, attr(1, ip4("10.9.9.9")), attr(2, ip4("10.9.9.9"))))!,
  ];
  const list = addressSpecs(ADDRS, LINKS);
  const byId = Object.fromEntries(list.map((a) => [a.id, a.spec]));

  it("keys addresses as <link>/<addr>/<bits>, link by link", () => {
    expect(list.map((a) => a.id)).toEqual([
      "lo/127.0.0.1/8", "lo/::1/128", "va/10.250.1.1/24", "va/10.250.2.2/32", "va/fd00:250::1/64", "va/fe80::a0e0:94ff:fef2:b734/64",
      "va/fd00:251::2/128",
    ]);
  });

  it("renders IPv4 with local and broadcast, upstream key order", () => {
    expect(byId["va/10.250.1.1/24"]).toEqual({
      address: "10.250.1.1/24", local: "10.250.1.1", broadcast: "10.250.1.255", linkIndex: 3, linkName: "va", family: "inet4",
      scope: "global", flags: "permanent", priority: 0,
    });
    expect(Object.keys(byId["lo/127.0.0.1/8"])).toEqual(["address", "local", "linkIndex", "linkName", "family", "scope", "flags", "priority"]);
    expect(byId["lo/127.0.0.1/8"].scope).toBe("host");
  });

  it("keys point-to-point addresses on the peer (IFA_ADDRESS) and reports IFA_LOCAL", () => {
    expect(byId["va/10.250.2.2/32"]).toMatchObject({ address: "10.250.2.2/32", local: "10.250.2.1" });
    expect(byId["va/fd00:251::2/128"]).toMatchObject({ address: "fd00:251::2/128", local: "fd00:251::1" });
  });

  it("omits local for IPv6, decodes IFA_FLAGS (bits above 0x80 too) and the route priority", () => {
    expect(byId["va/fd00:250::1/64"]).toEqual({
      address: "fd00:250::1/64", linkIndex: 3, linkName: "va", family: "inet6", scope: "global", flags: "nodad,permanent", priority: 256,
    });
    expect(byId["va/fe80::a0e0:94ff:fef2:b734/64"]).toMatchObject({ scope: "link", flags: "stableprivacy" });
  });
});

describe("RouteStatus from RTM_NEWROUTE", () => {
  const v4 = [
    decodeRoute(rtmsg({ family: 2, dstLen: 24, scope: 253, protocol: 2 }, attr(15, u32(254)), attr(1, ip4("10.250.1.0")), attr(7, ip4("10.250.1.1")), attr(4, u32(3))))!,
    decodeRoute(rtmsg({ family: 2, dstLen: 24, protocol: 4 }, attr(15, u32(254)), attr(1, ip4("10.250.9.0")), attr(5, ip4("10.250.1.2")), attr(6, u32(1024)), attr(4, u32(3))))!,
    decodeRoute(rtmsg({ family: 2, dstLen: 0, table: 100 }, attr(15, u32(100)), attr(5, ip4("10.250.1.254")), attr(4, u32(3))))!,
    decodeRoute(rtmsg({ family: 2, dstLen: 32, table: 255, type: 2, scope: 254, protocol: 2 }, attr(15, u32(255)), attr(1, ip4("10.250.1.1")), attr(4, u32(3))))!,
    decodeRoute(rtmsg({ family: 2, dstLen: 24 }, attr(15, u32(254)), attr(1, ip4("10.250.10.0")), nested(8, attr(2, u32(1400))),
      attr(9, Buffer.concat([
        Buffer.concat([u16(16), Buffer.from([0, 0]), u32(3), attr(5, ip4("10.250.1.2"))]),
        Buffer.concat([u16(16), Buffer.from([0, 2]), u32(3), attr(5, ip4("10.250.1.3"))]),
      ]))))!,
    decodeRoute(rtmsg({ family: 2, dstLen: 24, flags: 0x200 }, attr(1, ip4("10.250.99.0")), attr(4, u32(3))))!,
    decodeRoute(rtmsg({ family: 2, dstLen: 24, flags: 0x100 | 0x4000 }, attr(15, u32(1000)), attr(1, ip4("10.1.0.0")), attr(4, u32(42)), attr(18, Buffer.concat([u16(10), ip6("fd00::fe")]))))!,
  ];
  const v6 = [
    decodeRoute(rtmsg({ family: 10, dstLen: 0, protocol: 4 }, attr(15, u32(254)), attr(5, ip6("fd00:250::fe")), attr(6, u32(1024)), attr(4, u32(3))))!,
    decodeRoute(rtmsg({ family: 10, dstLen: 128, table: 255, type: 2, protocol: 2 }, attr(15, u32(255)), attr(1, ip6("::1")), attr(4, u32(1))))!,
    decodeRoute(rtmsg({ family: 10, dstLen: 8, table: 255, type: 5 }, attr(15, u32(255)), attr(1, ip6("ff00::")), attr(6, u32(256)), attr(4, u32(4))))!,
  ];
  const r4 = Object.fromEntries(routeSpecs(v4, LINKS).map((r) => [r.id, r.spec]));
  const r6 = Object.fromEntries(routeSpecs(v6, LINKS).map((r) => [r.id, r.spec]));

  it("builds upstream ids for every table and skips cached (cloned) routes", () => {
    expect(Object.keys(r4)).toEqual([
      "inet4//10.250.1.0/24/0", "inet4/10.250.1.2/10.250.9.0/24/1024", "100/inet4/10.250.1.254//0", "local/inet4//10.250.1.1/32/0",
      "inet4//10.250.10.0/24/0", "RoutingTable(1000)/inet4/fd00::fe/10.1.0.0/24/0",
    ]);
    expect(Object.keys(r6)).toEqual(["va/inet6/fd00:250::fe//1024", "local/lo/inet6//::1/128/0", "local/br0/inet6//ff00::/8/256"]);
  });

  it("renders a gateway route like Talos, keys in upstream order", () => {
    expect(r4["inet4/10.250.1.2/10.250.9.0/24/1024"]).toEqual({
      family: "inet4", dst: "10.250.9.0/24", src: "", gateway: "10.250.1.2", outLinkIndex: 3, outLinkName: "va",
      table: "main", priority: 1024, scope: "global", type: "unicast", flags: "", protocol: "static",
    });
    expect(r4["inet4//10.250.1.0/24/0"]).toMatchObject({ src: "10.250.1.1", scope: "link", protocol: "kernel" });
  });

  it("renders default routes with an empty destination, and local and multicast routes", () => {
    expect(r4["100/inet4/10.250.1.254//0"]).toMatchObject({ dst: "", table: "100", protocol: "boot" });
    expect(r6["va/inet6/fd00:250::fe//1024"]).toMatchObject({ dst: "", gateway: "fd00:250::fe", family: "inet6", table: "main" });
    expect(r4["local/inet4//10.250.1.1/32/0"]).toMatchObject({ type: "local", scope: "host", table: "local" });
    expect(r6["local/br0/inet6//ff00::/8/256"]).toMatchObject({ type: "multicast", priority: 256 });
  });

  it("keeps multipath next hops (weight = hops + 1) and the route MTU", () => {
    const r = r4["inet4//10.250.10.0/24/0"];
    expect(r.outLinkName).toBeUndefined();
    expect(r.mtu).toBe(1400);
    expect(r.nextHops).toEqual([
      { gateway: "10.250.1.2", outLinkName: "va", weight: 1 },
      { gateway: "10.250.1.3", outLinkName: "va", weight: 3 },
    ]);
  });

  it("surfaces RTA_VIA as the gateway, prints kernel flags, unknown tables and unresolvable links", () => {
    const r = r4["RoutingTable(1000)/inet4/fd00::fe/10.1.0.0/24/0"];
    expect(r).toMatchObject({ gateway: "fd00::fe", flags: "notify,offload", table: "RoutingTable(1000)", outLinkName: "if42" });
    expect(r.outLinkIndex).toBeUndefined();
  });
});
