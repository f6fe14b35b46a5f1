/**
 * Real-OS test: builds a private network namespace with a veth pair and checks what the observers see.
 * Needs root and iproute2; skips itself (saying why) otherwise. Only touches its own namespace.
 */
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { observeAddresses, observeLinks, observeRoutes } from "../../../src/host/net/index.js";

const NS = `machined-test-${process.pid}`;
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
  });

  afterAll(() => {
    try {
      ip("netns", "delete", NS);
    } catch {
      // already gone
    }
  });

  it("sees the veth pair as linked peers", async () => {
    const links = Object.fromEntries((await observeLinks({ netns: NS })).map((l) => [l.id, l.spec]));
    expect(Object.keys(links).sort()).toEqual(["lo", "mt0", "mt1"]);
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

  it("observes our own namespace too", async () => {
    const links = await observeLinks();
    expect(links.map((l) => l.id)).toContain("lo");
  });
});

if (skipReason) console.log(`skipping live network namespace test: ${skipReason}`);
