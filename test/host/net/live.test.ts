/**
 * Real-OS test: builds a private network namespace with a veth pair and checks what the rtnetlink
 * observers see, that they agree with iproute2's view of the same kernel (ip-oracle.ts), and that the
 * kernel's change notifications reach a watcher. Needs root and iproute2; skips itself (saying why)
 * otherwise. Only touches its own namespaces.
 */
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { observeAddresses, observeLinks, observeRoutes, watchKernel, type NetKind } from "../../../src/host/net/index.js";
import { ipObserve } from "./ip-oracle.js";
import { eventually } from "../../state/helpers.js";

const NS = `machined-test-${process.pid}`;
const OTHER = `machined-test-${process.pid}-other`;
// 10.250.<pid-derived>.0/24 keeps concurrent runs apart.
const NET = `10.250.${process.pid % 250}`;

function ip(...args: string[]) {
  execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });
}

let skipReason = "";
if (process.getuid?.() !== 0) skipReason = "needs root to create a network namespace";
else {
  try {
    ip("-V");
  } catch {
    skipReason = "iproute2 (ip) is not installed";
  }
}

describe.skipIf(Boolean(skipReason))("observing a live network namespace", () => {
  beforeAll(() => {
    ip("netns", "add", NS);
    ip("-n", NS, "link", "add", "mt0", "type", "veth", "peer", "name", "mt1");
    ip("-n", NS, "addr", "add", `${NET}.1/24`, "dev", "mt0");
    // A different subnet on mt1: IPv4 route ids carry no link, so two connected /24s would share one id.
    ip("-n", NS, "addr", "add", `${NET}.130/25`, "dev", "mt1");
    ip("-n", NS, "addr", "add", "fd00:250::1/64", "dev", "mt0", "nodad");
    for (const l of ["lo", "mt0", "mt1"]) ip("-n", NS, "link", "set", l, "up");
    ip("-n", NS, "route", "add", "10.250.251.0/24", "via", `${NET}.2`, "dev", "mt0", "metric", "77");
    // More shapes for the comparison with iproute2: a bridge with STP, an alias and altname, peer addresses,
    // other tables, multipath with an MTU, blackhole/unreachable, a cross-family gateway, a veth whose peer
    // lives in another namespace.
    ip("netns", "add", OTHER);
    ip("-n", NS, "link", "add", "mb0", "type", "bridge", "stp_state", "1");
    ip("-n", NS, "link", "add", "mt2", "type", "veth", "peer", "name", "mt3");
    ip("-n", NS, "link", "set", "mt3", "master", "mb0");
    ip("-n", NS, "link", "add", "mx0", "type", "veth", "peer", "name", "mx1", "netns", OTHER);
    ip("-n", NS, "link", "set", "mt2", "alias", "uplink");
    ip("-n", NS, "link", "property", "add", "dev", "mt2", "altname", "uplink0");
    for (const l of ["mb0", "mt2", "mt3", "mx0"]) ip("-n", NS, "link", "set", l, "up");
    ip("-n", NS, "addr", "add", `${NET}.200`, "peer", `${NET}.201/32`, "dev", "mt2");
    ip("-n", NS, "addr", "add", "fd00:251::1", "peer", "fd00:251::2/128", "dev", "mt2", "nodad");
    ip("-n", NS, "addr", "add", "fd00:252::1/64", "dev", "mt2", "nodad", "noprefixroute");
    ip("-n", NS, "route", "add", "default", "via", `${NET}.254`, "dev", "mt0", "table", "100");
    ip("-n", NS, "route", "add", "10.250.252.0/24", "mtu", "1400", "nexthop", "via", `${NET}.2`, "dev", "mt0", "weight", "1",
      "nexthop", "via", `${NET}.3`, "dev", "mt0", "weight", "3");
    ip("-n", NS, "route", "add", "blackhole", "10.250.253.0/24");
    ip("-n", NS, "route", "add", "unreachable", "10.250.254.0/24", "metric", "5");
    ip("-n", NS, "-6", "route", "add", "default", "via", "fd00:250::fe", "dev", "mt0");
    ip("-n", NS, "-6", "route", "add", "fd00:260::/64", "via", "fd00:250::fe", "dev", "mt0", "metric", "77", "mtu", "1300");
    ip("-n", NS, "route", "add", "10.250.249.0/24", "via", "inet6", "fd00:250::fe", "dev", "mt0");
  });

  afterAll(() => {
    for (const ns of [NS, OTHER]) {
      try {
        ip("netns", "delete", ns);
      } catch {
        // already gone
      }
    }
  });

  it("sees the veth pair as linked peers", async () => {
    const links = Object.fromEntries((await observeLinks({ netns: NS })).map((l) => [l.id, l.spec]));
    expect(Object.keys(links).sort()).toEqual(["lo", "mb0", "mt0", "mt1", "mt2", "mt3", "mx0"]);
    expect(links.mt0).toMatchObject({ type: "ether", kind: "veth", operationalState: "up", linkState: true, veth: { peerName: "mt1" } });
    expect(links.mt0.flags).toBe("UP,BROADCAST,RUNNING,MULTICAST,LOWER_UP");
    expect(links.mt0.linkIndex).toBe(links.mt1.index);
    expect(links.mt0.hardwareAddr).toMatch(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
    expect(links.lo).toMatchObject({ type: "loopback", operationalState: "unknown" });
  });

  it("sees the addresses", async () => {
    const addrs = Object.fromEntries((await observeAddresses({ netns: NS })).map((a) => [a.id, a.spec]));
    expect(addrs[`mt0/${NET}.1/24`]).toMatchObject({ local: `${NET}.1`, linkName: "mt0", family: "inet4", scope: "global", flags: "permanent" });
    expect(addrs[`mt1/${NET}.130/25`]).toMatchObject({ linkName: "mt1" });
    expect(addrs["mt0/fd00:250::1/64"]).toMatchObject({ family: "inet6", flags: "nodad,permanent" });
    expect(addrs["lo/127.0.0.1/8"]).toMatchObject({ scope: "host" });
  });

  it("sees connected, static and local routes", async () => {
    const routes = Object.fromEntries((await observeRoutes({ netns: NS })).map((r) => [r.id, r.spec]));
    expect(routes[`inet4/${NET}.2/10.250.251.0/24/77`]).toMatchObject({ outLinkName: "mt0", protocol: "boot", table: "main" });
    expect(routes[`inet4//${NET}.0/24/0`]).toMatchObject({ scope: "link", protocol: "kernel", src: `${NET}.1` });
    expect(routes[`inet4//${NET}.128/25/0`]).toMatchObject({ outLinkName: "mt1", src: `${NET}.130` });
    expect(routes[`local/inet4//${NET}.1/32/0`]).toMatchObject({ type: "local", table: "local" });
    expect(routes["mt0/inet6//fd00:250::/64/256"]).toMatchObject({ family: "inet6", outLinkName: "mt0" });
  });

  it("agrees with iproute2's view of the same namespace, spec for spec", async () => {
    const ipView = ipObserve(NS);
    const byId = <S>(l: Array<{ id: string; spec: S }>) => Object.fromEntries(l.map((x) => [x.id, x.spec]));
    expect(byId(await observeLinks({ netns: NS }))).toEqual(byId(ipView.links));
    expect(byId(await observeAddresses({ netns: NS }))).toEqual(byId(ipView.addresses));
    expect(byId(await observeRoutes({ netns: NS }))).toEqual(byId(ipView.routes));
    expect(Object.keys(byId(ipView.routes)).length).toBeGreaterThan(20);
  });

  it("hears the kernel announce link, address and route changes", async () => {
    const seen = new Set<NetKind>();
    const stop = watchKernel(NS, (kinds) => kinds.forEach((k) => seen.add(k)));
    try {
      ip("-n", NS, "addr", "add", `${NET}.99/24`, "dev", "mt1");
      await eventually(() => seen.has("addresses"), 5000, "address notification");
      expect(seen.has("links")).toBe(false);
      seen.clear();
      ip("-n", NS, "route", "add", "10.250.248.0/24", "via", `${NET}.2`, "dev", "mt0");
      await eventually(() => seen.has("routes"), 5000, "route notification");
      seen.clear();
      ip("-n", NS, "link", "set", "mt2", "mtu", "1400");
      await eventually(() => seen.has("links") && seen.has("addresses") && seen.has("routes"), 5000, "link notification");
    } finally {
      stop();
    }
    // Unsubscribed: the socket is closed and nothing more arrives.
    seen.clear();
    ip("-n", NS, "addr", "add", `${NET}.98/24`, "dev", "mt1");
    await new Promise((r) => setTimeout(r, 200));
    expect(seen.size).toBe(0);
  });

  it("refuses a namespace that does not exist, naming it", async () => {
    await expect(observeLinks({ netns: "machined-no-such-ns" })).rejects.toThrow(/machined-no-such-ns/);
  });

  it("observes our own namespace too", async () => {
    const links = await observeLinks();
    expect(links.map((l) => l.id)).toContain("lo");
  });
});

if (skipReason) console.log(`skipping live network namespace test: ${skipReason}`);
