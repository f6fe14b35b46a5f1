/**
 * Local mode must never change the host network: no apply controllers without an explicit target, no
 * target without a netns name or a real PID 1, and the apply functions refuse hand-made targets.
 * Plus the small pure helpers (lease parsing, route normalisation, address text and ordering).
 */
import { describe, expect, it } from "vitest";
import { networkControllers, networkTarget } from "../../../src/controllers/network/index.js";
import { routeSpec } from "../../../src/controllers/network/route-merge.js";
import { renderHosts, renderResolvConf } from "../../../src/controllers/network/etc-files.js";
import { splitFQDN } from "../../../src/controllers/network/hostname-merge.js";
import {
  broadcastAddr, comparePrefixV1, comparePrefixV2, formatPrefix, parsePrefix,
} from "../../../src/machinery/net/addr.js";
import {
  addAddress, netnsTarget, parseLease, pid1Target, replaceRoute, setHostname, setLinkUp, writeEtcFiles, type NetTarget,
} from "../../../src/host/net/apply.js";
import { fakeKernel } from "./helpers.js";

const APPLY_CONTROLLERS = [
  "network.LinkSpecController", "network.AddressSpecController", "network.RouteSpecController",
  "network.OperatorSpecController", "network.EtcFileController",
];

describe("manage mode is explicit", () => {
  it("observe mode has no controller that changes the network", () => {
    const names = networkControllers({ manage: false, observe: fakeKernel().observe, etcRoot: "/tmp/x" }).map((c) => c.name);
    expect(names).toHaveLength(13);
    for (const n of APPLY_CONTROLLERS) expect(names).not.toContain(n);
    // Even a netns or pid1 flag does nothing without manage.
    expect(networkTarget({ manage: false, netns: "x", pid1: true })).toBeUndefined();
  });

  it("refuses manage without a netns or a real PID 1", () => {
    expect(() => networkControllers({ manage: true })).toThrow(/requires a network namespace \(netns\) or pid1/);
    expect(() => networkControllers({ manage: true, pid1: true })).toThrow(/not PID 1/);
    expect(() => pid1Target(4242)).toThrow(/not PID 1/);
    expect(pid1Target(1).kind).toBe("pid1");
    const names = networkControllers({ manage: true, netns: "machined-x", etcRoot: "/tmp/x" }).map((c) => c.name);
    for (const n of APPLY_CONTROLLERS) expect(names).toContain(n);
    expect(networkControllers({ manage: true, netns: "machined-x" }).map((c) => c.name)).not.toContain("network.EtcFileController");
  });

  it("rejects bad namespace names and hand-made targets before running anything", async () => {
    for (const bad of ["", "a b", "../x", "-n", "x;rm"]) expect(() => netnsTarget(bad)).toThrow(/invalid network namespace/);
    const forged = { kind: "pid1" } as NetTarget;
    await expect(addAddress(forged, "eth0", "10.250.0.9/24")).rejects.toThrow(/not created by/);
    await expect(setLinkUp(forged, "eth0", true)).rejects.toThrow(/not created by/);
    await expect(replaceRoute({ kind: "netns", netns: "x" } as NetTarget, {
      family: "inet4", dst: "", gateway: "10.250.0.1", src: "", table: "main", priority: 1024, scope: "global", type: "unicast", protocol: "static",
    })).rejects.toThrow(/not created by/);
    // The hostname is shared between a netns and the host: never set for a netns target.
    await expect(setHostname(netnsTarget("machined-x"), "evil", "")).rejects.toThrow(/shared with the host/);
    await expect(writeEtcFiles("relative/etc", { hosts: "" })).rejects.toThrow(/absolute/);
    await expect(writeEtcFiles("/tmp", { "../passwd": "" })).rejects.toThrow(/invalid etc file name/);
  });
});

describe("helpers", () => {
  it("parses udhcpc's lease line", () => {
    const block = (ip: string) =>
      ["MACHINED_LEASE_BEGIN", `MACHINED_LEASE ip=${ip}`, "MACHINED_LEASE mask=24", "MACHINED_LEASE router=10.250.1.1 10.250.1.2",
        "MACHINED_LEASE dns=10.250.1.1 8.8.8.8", "MACHINED_LEASE domain=dhcp.test", "MACHINED_LEASE hostname=", "MACHINED_LEASE mtu=1400",
        "MACHINED_LEASE lease=600", "MACHINED_LEASE_END"].join("\n");
    const out = `udhcpc: started\n${block("10.250.1.100")}\nudhcpc: renew\n${block("10.250.1.101")}\n`;
    expect(parseLease(out)).toEqual({
      address: "10.250.1.101/24", routers: ["10.250.1.1", "10.250.1.2"], dnsServers: ["10.250.1.1", "8.8.8.8"], domain: "dhcp.test",
      hostname: "", mtu: 1400, leaseSeconds: 600,
    });
    expect(parseLease("udhcpc: no lease, failing\n")).toBeUndefined();
  });

  it("normalises config routes like upstream", () => {
    expect(routeSpec("eth0", { network: "0.0.0.0/0", gateway: "10.0.0.1" }, "configuration")?.id).toBe("inet4/10.0.0.1//1024");
    expect(routeSpec("eth0", { network: "::/0", gateway: "fd00::1", metric: 5 }, "configuration")?.id).toBe("eth0/inet6/fd00::1//5");
    expect(routeSpec("eth0", { network: "10.1.0.0/16" }, "configuration")?.spec).toMatchObject({ scope: "link", gateway: "", dst: "10.1.0.0/16" });
    expect(routeSpec("eth0", { network: "224.0.0.0/4" }, "configuration")?.spec.type).toBe("multicast");
    expect(routeSpec("eth0", { network: "bogus" }, "configuration")).toBeUndefined();
  });

  it("formats and orders prefixes as Go's netip", () => {
    const p = (s: string) => parsePrefix(s)!;
    expect(formatPrefix(p("fd00:0:0:0:0:0:0:2/64"))).toBe("fd00::2/64");
    expect(formatPrefix(p("2001:db8:0:1:0:0:0:1"))).toBe("2001:db8:0:1::1/128");
    expect(formatPrefix(p("1:0:1:0:1:0:1:0/64"))).toBe("1:0:1:0:1:0:1:0/64");
    expect(parsePrefix("10.0.0.1/33")).toBeUndefined();
    const list = ["fd00::1/64", "10.0.0.2/8", "10.0.0.1/24", "10.0.0.1/16"].map(p);
    expect([...list].sort(comparePrefixV1).map(formatPrefix)).toEqual(["10.0.0.1/16", "10.0.0.1/24", "10.0.0.2/8", "fd00::1/64"]);
    // v2: more specific first when one network contains the other's address.
    expect([...list].sort(comparePrefixV2).map(formatPrefix)).toEqual(["10.0.0.1/24", "10.0.0.1/16", "10.0.0.2/8", "fd00::1/64"]);
    expect(broadcastAddr(p("10.250.0.2/24"))).toBe("10.250.0.255");
    expect(broadcastAddr(p("10.250.0.2/31"))).toBeUndefined();
    expect(splitFQDN("a.b.c")).toEqual({ hostname: "a", domainname: "b.c" });
  });

  it("renders resolv.conf (max three plain resolvers) and hosts", () => {
    expect(renderResolvConf({
      dnsServers: ["1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"],
      nameServers: ["1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4", "5.5.5.5"].map((addr, i) => ({ addr, protocol: i === 1 ? "DoT" : "Do53", tlsServerName: "" })),
      searchDomains: [],
    })).toBe("nameserver 1.1.1.1\nnameserver 3.3.3.3\nnameserver 4.4.4.4\n");
    expect(renderHosts(undefined, undefined, [])).toBe("127.0.0.1 localhost\n::1       localhost ip6-localhost ip6-loopback\nff02::1   ip6-allnodes\nff02::2   ip6-allrouters\n");
  });
});
