/** The network controllers converging with the real store and runtime, fed by fake kernel observations. */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { networkControllers } from "../../../src/controllers/network/index.js";
import { dhcp4Controller } from "../../../src/controllers/network/dhcp4.js";
import { addressMergeController } from "../../../src/controllers/network/address-merge.js";
import { routeMergeController } from "../../../src/controllers/network/route-merge.js";
import { resolverMergeController } from "../../../src/controllers/network/resolver-merge.js";
import { linkStatusController } from "../../../src/controllers/network/link-status.js";
import { etcFileController } from "../../../src/controllers/network/etc-files.js";
import { netnsTarget } from "../../../src/host/net/apply.js";
import * as T from "../../../src/machinery/resources/types/network.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import type { ControllerRuntime } from "../../../src/state/runtime/index.js";
import { CONFIG, addr, eventually, eventuallyAsync, fakeKernel, ids, link, route, setConfig, spec, start } from "./helpers.js";

let rt: ControllerRuntime | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await rt?.stop();
  rt = undefined;
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
});

const tmp = async () => {
  const d = await mkdtemp(path.join(tmpdir(), "machined-net-test-"));
  dirs.push(d);
  return d;
};

const json = (v: unknown) => JSON.stringify(v);

describe("status controllers (observe mode)", () => {
  it("mirror the kernel into LinkStatus/AddressStatus/RouteStatus and drop what vanished", async () => {
    const s = new InMemoryState();
    const { k, observe, changed, watching } = fakeKernel();
    rt = start(s, networkControllers({ manage: false, observe, etcRoot: await tmp() }));
    await eventually(() => ids(s, T.AddressStatusType.type).length === 2, 3000, "addresses");
    // links, addresses, routes, resolvers and the hostname are each watched, not polled.
    expect(watching()).toBe(5);
    expect(ids(s, T.LinkStatusType.type)).toEqual(["eth0", "lo"]);
    expect(ids(s, T.RouteStatusType.type)).toEqual(["inet4/10.5.0.1//1024"]);
    expect(s.get({ namespace: "network", type: T.LinkStatusType.type, id: "eth0" })?.metadata.owner).toBe("network.LinkStatusController");
    expect(s.get({ namespace: "network", type: T.AddressStatusType.type, id: "eth0/10.5.0.2/24" })?.metadata.owner).toBe("network.AddressStatusController");
    expect(s.get({ namespace: "network", type: T.RouteStatusType.type, id: "inet4/10.5.0.1//1024" })?.metadata.owner).toBe("network.RouteStatusController");

    k.addresses = [k.addresses[0], addr(2, "eth0", "10.5.0.3/24")];
    k.links[1].spec.mtu = 9000;
    k.routes = [];
    changed("links", "addresses", "routes");
    await eventually(() => json(ids(s, T.AddressStatusType.type)) === json(["eth0/10.5.0.3/24", "lo/127.0.0.1/8"]), 3000, "address swap");
    await eventually(() => spec<T.LinkStatusSpec>(s, T.LinkStatusType.type, "eth0")?.mtu === 9000, 3000, "mtu");
    await eventually(() => ids(s, T.RouteStatusType.type).length === 0, 3000, "route removed");
    await rt.stop();
    rt = undefined;
    expect(watching()).toBe(0);
  });

  it("report the configured hostname (never set on the host) and the host's resolvers when not managing", async () => {
    const s = new InMemoryState();
    const { k, observe } = fakeKernel();
    setConfig(s, CONFIG);
    rt = start(s, networkControllers({ manage: false, observe, etcRoot: await tmp() }));
    await eventually(() => spec<T.ResolverSpecSpec>(s, T.ResolverSpecType.type, "resolvers") !== undefined, 3000, "resolver spec");
    await eventually(() => spec(s, T.HostnameStatusType.type, "hostname") !== undefined, 3000, "hostname status");
    expect(spec(s, T.HostnameSpecType.type, "hostname")).toEqual({ hostname: "node-1", domainname: "example.org", layer: "configuration" });
    await eventually(() => spec<T.HostnameStatusSpec>(s, T.HostnameStatusType.type, "hostname")?.hostname === "node-1", 3000, "configured hostname");
    expect(spec(s, T.HostnameStatusType.type, "hostname")).toEqual({ hostname: "node-1", domainname: "example.org" });
    expect(s.get({ namespace: "network", type: T.HostnameStatusType.type, id: "hostname" })?.metadata.owner).toBe("network.HostnameSpecController");
    expect(spec(s, T.ResolverStatusType.type, "resolvers")).toEqual({ dnsServers: ["10.5.0.1"], searchDomains: ["lan"] });
    expect(k.hostname.hostname).toBe("devbox"); // the host's own name is untouched
  });

  it("report the host's hostname when none is configured, following changes", async () => {
    const s = new InMemoryState();
    const { k, observe, changed } = fakeKernel();
    setConfig(s, CONFIG.replace(/\n\s*hostname: [^\n]*/, ""));
    rt = start(s, networkControllers({ manage: false, observe, etcRoot: await tmp() }));
    await eventually(() => spec<T.HostnameStatusSpec>(s, T.HostnameStatusType.type, "hostname")?.hostname === "devbox", 3000, "kernel hostname");
    k.hostname = { hostname: "renamed", domainname: "corp" };
    changed("hostname");
    await eventually(() => spec<T.HostnameStatusSpec>(s, T.HostnameStatusType.type, "hostname")?.hostname === "renamed", 3000, "hostname change");
  });
});

describe("config → spec controllers", () => {
  it("derive hostname, address, route, link, resolver and time server specs, and follow config changes", async () => {
    const s = new InMemoryState();
    const { observe } = fakeKernel();
    setConfig(s, CONFIG);
    rt = start(s, networkControllers({ manage: false, observe, etcRoot: await tmp() }));
    await eventually(() => ids(s, T.RouteSpecType.type).length === 2, 3000, "route specs");
    await eventually(() => ids(s, T.AddressSpecType.type).length === 4, 3000, "address specs");

    expect(ids(s, T.AddressSpecType.type)).toEqual(["eth0.42/10.42.0.2/24", "eth0/10.5.0.2/24", "eth0/fd00::2/64", "lo/127.0.0.1/8"]);
    expect(spec(s, T.AddressSpecType.type, "eth0/fd00::2/64")).toEqual({
      address: "fd00::2/64", linkName: "eth0", family: "inet6", scope: "global", flags: "permanent", layer: "configuration",
    });
    expect(spec<T.AddressSpecSpec>(s, T.AddressSpecType.type, "lo/127.0.0.1/8")).toMatchObject({ scope: "host", layer: "default" });
    expect(s.get({ namespace: "network", type: T.AddressSpecType.type, id: "lo/127.0.0.1/8" })?.metadata.owner).toBe("network.AddressMergeController");

    expect(ids(s, T.RouteSpecType.type)).toEqual(["inet4//192.168.10.0/24/100", "inet4/10.5.0.1//1024"]);
    expect(spec(s, T.RouteSpecType.type, "inet4/10.5.0.1//1024")).toEqual({
      family: "inet4", dst: "", src: "", gateway: "10.5.0.1", outLinkName: "eth0", table: "main", priority: 1024, scope: "global",
      type: "unicast", flags: "", protocol: "static", layer: "configuration",
    });
    expect(spec<T.RouteSpecSpec>(s, T.RouteSpecType.type, "inet4//192.168.10.0/24/100")?.scope).toBe("link");

    expect(ids(s, T.LinkSpecType.type)).toEqual(["eth0", "eth0.42", "lo"]);
    expect(spec<T.LinkSpecSpec>(s, T.LinkSpecType.type, "eth0")).toMatchObject({ up: true, mtu: 1400, logical: false });
    expect(spec<T.LinkSpecSpec>(s, T.LinkSpecType.type, "eth0.42")).toMatchObject({ logical: true, kind: "vlan", parentName: "eth0", vlan: { vlanID: 42 } });

    await eventually(() => spec<T.ResolverSpecSpec>(s, T.ResolverSpecType.type, "resolvers")?.layer === "configuration", 3000, "resolvers");
    expect(spec<T.ResolverSpecSpec>(s, T.ResolverSpecType.type, "resolvers")?.dnsServers).toEqual(["9.9.9.9", "2620:fe::fe"]);
    expect(spec(s, T.TimeServerStatusType.type, "timeservers")).toEqual({ timeServers: ["pool.ntp.org"], useNTS: false });
    expect(s.get({ namespace: "network", type: T.TimeServerStatusType.type, id: "timeservers" })?.metadata.owner).toBe("network.TimeServerSpecController");

    // A new config: one address, no routes, no nameservers or time servers → defaults come back.
    setConfig(s, `version: v1alpha1
machine:
  type: worker
  network:
    interfaces:
      - interface: eth0
        addresses: [10.5.0.7/24]
`);
    await eventually(() => json(ids(s, T.AddressSpecType.type)) === json(["eth0/10.5.0.7/24", "lo/127.0.0.1/8"]), 3000, "addresses follow config");
    await eventually(() => ids(s, T.RouteSpecType.type).length === 0, 3000, "routes gone");
    await eventually(() => spec<T.TimeServerStatusSpec>(s, T.TimeServerStatusType.type, "timeservers")?.timeServers[0] === "time.cloudflare.com", 3000, "default ntp");
    await eventually(() => spec<T.ResolverSpecSpec>(s, T.ResolverSpecType.type, "resolvers")?.layer === "default", 3000, "default resolvers");
    expect(spec<T.ResolverSpecSpec>(s, T.ResolverSpecType.type, "resolvers")?.dnsServers).toEqual(["1.1.1.1", "8.8.8.8"]);
    // Without a configured hostname the kernel's is kept.
    await eventually(() => spec<T.HostnameSpecSpec>(s, T.HostnameSpecType.type, "hostname")?.hostname === "devbox", 3000, "kernel hostname");
  });
});

describe("NodeAddress and NetworkStatus", () => {
  it("computes current/routed/default/accumulative and the k8s-filtered variants", async () => {
    const s = new InMemoryState();
    const { k, observe, changed } = fakeKernel();
    k.links.push(link(3, "eth1", { flags: "BROADCAST,MULTICAST", operationalState: "down", linkState: false }));
    k.addresses.push(
      addr(2, "eth0", "10.244.1.1/24"),
      addr(2, "eth0", "fe80::1/64", "link"),
      addr(2, "eth0", "fd00::5/64"),
      addr(3, "eth1", "10.6.0.2/24"),
    );
    setConfig(s, CONFIG);
    rt = start(s, networkControllers({ manage: false, observe, etcRoot: await tmp() }));
    const na = (id: string) => spec<T.NodeAddressSpec>(s, T.NodeAddressType.type, id)?.addresses;
    await eventually(() => na("current")?.length === 3, 3000, "current");
    expect(na("current")).toEqual(["10.5.0.2/24", "10.244.1.1/24", "fd00::5/64"]);
    expect(na("routed")).toEqual(na("current"));
    expect(na("default")).toEqual(["10.5.0.2/24"]);
    expect(na("accumulative")).toEqual(["10.5.0.2/24", "10.6.0.2/24", "10.244.1.1/24", "fd00::5/64"]);
    expect(na("current-no-k8s")).toEqual(["10.5.0.2/24", "fd00::5/64"]);
    expect(na("routed-no-k8s")).toEqual(["10.5.0.2/24", "fd00::5/64"]);
    expect(na("current-only-k8s")).toEqual(["10.244.1.1/24"]);
    expect(spec<T.NodeAddressSpec>(s, T.NodeAddressType.type, "current")?.sortAlgorithm).toBe("v1");

    // An address goes away: current shrinks, accumulative keeps it, default stays while still present.
    k.addresses = k.addresses.filter((a) => a.spec.address !== "10.244.1.1/24");
    k.addresses.push(addr(2, "eth0", "10.5.0.1/24"));
    changed("addresses");
    await eventually(() => json(na("current")) === json(["10.5.0.1/24", "10.5.0.2/24", "fd00::5/64"]), 3000, "current after change");
    expect(na("default")).toEqual(["10.5.0.2/24"]);
    expect(na("accumulative")).toContain("10.244.1.1/24");
    expect(na("accumulative")).toContain("10.5.0.1/24");
  });

  it("reports readiness: address, default route, hostname and etc files", async () => {
    const s = new InMemoryState();
    const { k, observe, changed } = fakeKernel();
    const etc = await tmp();
    rt = start(s, networkControllers({ manage: false, observe, retryMs: 20, etcRoot: etc }));
    const st = () => spec<T.NetworkStatusSpec>(s, T.NetworkStatusType.type, "status");
    await eventually(() => st()?.addressReady === true && st()?.hostnameReady === true, 3000, "address+hostname");
    expect(st()).toEqual({ addressReady: true, connectivityReady: true, hostnameReady: true, etcFilesReady: false });
    expect(s.get({ namespace: "network", type: T.NetworkStatusType.type, id: "status" })?.metadata.owner).toBe("network.StatusController");
    await writeFile(path.join(etc, "hosts"), "127.0.0.1 localhost\n");
    await writeFile(path.join(etc, "resolv.conf"), "nameserver 1.1.1.1\n");
    await eventually(() => st()?.etcFilesReady === true, 3000, "etc files");
    k.routes = [route("10.9.0.0/16", "10.5.0.1", "eth0")];
    k.addresses = [];
    changed("routes", "addresses");
    await eventually(() => st()?.connectivityReady === false && st()?.addressReady === false, 3000, "no default route, no address");
  });
});

describe("DHCP and etc files (manage-mode controllers without touching a kernel)", () => {
  it("folds a DHCP lease in at the operator layer; config nameservers still win", async () => {
    const s = new InMemoryState();
    const { k, observe } = fakeKernel();
    k.links.push(link(3, "eth1"));
    setConfig(s, `version: v1alpha1
machine:
  type: worker
  network:
    interfaces:
      - interface: eth1
        dhcp: true
`);
    const env = { observe, target: netnsTarget("machined-unused"), etcRoot: "/nonexistent", retryMs: 20, watchFiles: () => () => {} };
    const asked: string[] = [];
    const lease = async (name: string) => {
      asked.push(name);
      return { address: "10.7.0.100/24", routers: ["10.7.0.1"], dnsServers: ["10.7.0.1"], domain: "dhcp.lan", hostname: "", leaseSeconds: 600 };
    };
    rt = start(s, [linkStatusController(env), dhcp4Controller(env, lease), addressMergeController(), routeMergeController(), resolverMergeController()]);
    await eventually(() => ids(s, T.AddressSpecType.type).includes("eth1/10.7.0.100/24"), 3000, "dhcp address merged");
    expect(asked).toEqual(["eth1"]);
    expect(ids(s, T.AddressSpecType.type, "network-config")).toEqual(["dhcp4/eth1/10.7.0.100/24"]);
    expect(s.get({ namespace: "network-config", type: T.AddressSpecType.type, id: "dhcp4/eth1/10.7.0.100/24" })?.metadata.owner).toBe("network.OperatorSpecController");
    await eventually(() => ids(s, T.RouteSpecType.type).includes("inet4/10.7.0.1//1024"), 3000, "dhcp route merged");
    expect(spec<T.RouteSpecSpec>(s, T.RouteSpecType.type, "inet4/10.7.0.1//1024")).toMatchObject({ protocol: "dhcp", layer: "operator", outLinkName: "eth1" });
    await eventually(() => spec<T.ResolverSpecSpec>(s, T.ResolverSpecType.type, "resolvers")?.layer === "operator", 3000, "dhcp resolvers");
    expect(spec<T.ResolverSpecSpec>(s, T.ResolverSpecType.type, "resolvers")).toMatchObject({ dnsServers: ["10.7.0.1"], searchDomains: ["dhcp.lan"] });

    setConfig(s, `version: v1alpha1
machine:
  type: worker
  network:
    nameservers: [9.9.9.9]
    interfaces:
      - interface: eth1
        dhcp: true
`);
    await eventually(() => spec<T.ResolverSpecSpec>(s, T.ResolverSpecType.type, "resolvers")?.layer === "configuration", 3000, "config wins");
    expect(spec<T.ResolverSpecSpec>(s, T.ResolverSpecType.type, "resolvers")).toMatchObject({ dnsServers: ["9.9.9.9"], searchDomains: ["dhcp.lan"] });

    // dhcp turned off: the lease's specs go away.
    setConfig(s, `version: v1alpha1
machine:
  type: worker
`);
    await eventually(() => ids(s, T.AddressSpecType.type, "network-config").length === 0, 3000, "dhcp specs cleaned");
    await eventually(() => !ids(s, T.AddressSpecType.type).includes("eth1/10.7.0.100/24"), 3000, "merged spec cleaned");
  });

  it("writes resolv.conf and hosts in upstream's layout into the etc folder", async () => {
    const s = new InMemoryState();
    const { observe } = fakeKernel();
    setConfig(s, CONFIG);
    const etc = await tmp();
    // Observe-mode controllers produce the inputs; the etc file controller only writes files.
    rt = start(s, [...networkControllers({ manage: false, observe, etcRoot: etc }), etcFileController(etc)]);
    // Observe mode reports the host's resolvers (fixture: 10.5.0.1, search lan) and the configured hostname.
    await eventually(() => spec(s, T.NodeAddressType.type, "default") !== undefined, 3000, "default address");
    const hosts = path.join(etc, "hosts");
    // Go's tabwriter (padding 1): the first column is the longest address plus one space.
    const want =
      "127.0.0.1 localhost\n" +
      "10.5.0.2  node-1.example.org node-1\n" +
      "::1       localhost ip6-localhost ip6-loopback\n" +
      "ff02::1   ip6-allnodes\n" +
      "ff02::2   ip6-allrouters\n" +
      "10.5.0.50 registry.local\n";
    // The file is rewritten as the inputs settle (hostname, addresses, extra entries): wait for the settled text.
    await eventuallyAsync(() => readFile(hosts, "utf8").then((t) => t === want, () => false), 3000, "hosts");
    expect(await readFile(hosts, "utf8")).toBe(want);
    // resolv.conf has its own inputs (the resolvers), so it may be written after the hosts file settles.
    const resolv = path.join(etc, "resolv.conf");
    const wantResolv = "nameserver 10.5.0.1\n\nsearch lan\n";
    await eventuallyAsync(() => readFile(resolv, "utf8").then((t) => t === wantResolv, () => false), 3000, "resolv.conf");
    expect(await readFile(resolv, "utf8")).toBe(wantResolv);
  });
});
