import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type IpLink, type IpRoute, parseRoutes, routeDst, routeId } from "../../../src/host/net/index.js";

// Captured with `ip -n <ns> -N -j -d -4|-6 route show table all` (same namespace as link.json).
const load = <T>(f: string): T => JSON.parse(readFileSync(new URL(`../fixtures/ip/${f}`, import.meta.url), "utf8"));
const LINKS = load<IpLink[]>("link.json");

describe("RouteStatus from ip route", () => {
  const v4 = Object.fromEntries(parseRoutes(load<IpRoute[]>("route4.json"), 2, LINKS).map((r) => [r.id, r.spec]));
  const v6 = Object.fromEntries(parseRoutes(load<IpRoute[]>("route6.json"), 10, LINKS).map((r) => [r.id, r.spec]));

  it("builds upstream ids for every table", () => {
    expect(Object.keys(v4)).toEqual([
      "100/inet4/10.250.1.254//0", "inet4//10.250.1.0/24/0", "inet4//10.250.2.2/32/0", "inet4/10.250.1.2/10.250.9.0/24/1024",
      "inet4//10.250.10.0/24/0", "local/inet4//10.250.1.1/32/0", "local/inet4//10.250.1.255/32/0",
      "local/inet4//10.250.2.1/32/0", "local/inet4//127.0.0.0/8/0", "local/inet4//127.0.0.1/32/0",
      "local/inet4//127.255.255.255/32/0",
    ]);
    expect(v6).toHaveProperty(["va/inet6/fd00:250::fe//1024"]);
    expect(v6).toHaveProperty(["local/lo/inet6//::1/128/0"]);
    expect(v6).toHaveProperty(["local/br0/inet6//ff00::/8/256"]);
  });

  it("renders a gateway route like Talos, keys in upstream order", () => {
    expect(v4["inet4/10.250.1.2/10.250.9.0/24/1024"]).toEqual({
      family: "inet4", dst: "10.250.9.0/24", src: "", gateway: "10.250.1.2", outLinkIndex: 3, outLinkName: "va",
      table: "main", priority: 1024, scope: "global", type: "unicast", flags: "", protocol: "static",
    });
    expect(Object.keys(v4["inet4//10.250.1.0/24/0"])).toEqual([
      "family", "dst", "src", "gateway", "outLinkIndex", "outLinkName", "table", "priority", "scope", "type", "flags", "protocol",
    ]);
    expect(v4["inet4//10.250.1.0/24/0"]).toMatchObject({ src: "10.250.1.1", scope: "link", protocol: "kernel" });
  });

  it("renders default routes with an empty destination", () => {
    expect(v4["100/inet4/10.250.1.254//0"]).toMatchObject({ dst: "", table: "100", protocol: "boot" });
    expect(v6["va/inet6/fd00:250::fe//1024"]).toMatchObject({ dst: "", gateway: "fd00:250::fe", family: "inet6", table: "main" });
  });

  it("renders local, broadcast and multicast routes", () => {
    expect(v4["local/inet4//10.250.1.1/32/0"]).toMatchObject({ type: "local", scope: "host", table: "local" });
    expect(v4["local/inet4//10.250.1.255/32/0"]).toMatchObject({ type: "broadcast", scope: "link" });
    expect(v6["local/va/inet6//ff00::/8/256"]).toMatchObject({ type: "multicast", priority: 256 });
  });

  it("keeps multipath next hops and the route MTU", () => {
    const r = v4["inet4//10.250.10.0/24/0"];
    expect(r.outLinkName).toBeUndefined();
    expect(r.mtu).toBe(1400);
    expect(r.nextHops).toEqual([
      { gateway: "10.250.1.2", outLinkName: "va", weight: 1 },
      { gateway: "10.250.1.3", outLinkName: "va", weight: 3 },
    ]);
  });

  it("normalises iproute2 destinations and flags", () => {
    expect(routeDst("default", 2)).toBe("");
    expect(routeDst("10.0.0.1", 2)).toBe("10.0.0.1/32");
    expect(routeDst("fd00::1", 10)).toBe("fd00::1/128");
    expect(routeDst("0/8 ", 2)).toBe("");
    const [r] = parseRoutes([{ dst: "10.1.0.0/16", dev: "va", flags: ["onlink", "rt_offload", "notify"], table: "1000", protocol: "8" }], 2, LINKS);
    expect(r.spec).toMatchObject({ flags: "notify,offload", table: "RoutingTable(1000)", protocol: "RouteProtocol(8)" });
    expect(r.id).toBe("RoutingTable(1000)/inet4//10.1.0.0/16/0");
    expect(routeId({ table: "main", family: "inet6", dst: "", gateway: "", priority: 5 })).toBe("/inet6///5");
  });
});
