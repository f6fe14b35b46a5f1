/** apid's routing rules (director) and the metadata a forwarded call carries (backend), on plain metadata. */
import { describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { dialAddress, invalidTarget, refersToThisNode, route, type DirectorView } from "../../../src/api/forward/director.js";
import { outgoingMetadata } from "../../../src/api/forward/forwarder.js";

const md = (pairs: Record<string, string | string[]>) => {
  const out = new grpc.Metadata();
  for (const [k, v] of Object.entries(pairs)) for (const x of [v].flat()) out.add(k, x);
  return out;
};
const controlPlane: DirectorView = { isLocal: (t) => t === "10.0.0.1" || t === "cp1", canForward: () => true };
const worker: DirectorView = { ...controlPlane, isLocal: (t) => t === "10.0.0.5", canForward: () => false };
const V = "/machine.MachineService/Version";
const GET = "/cosi.resource.State/Get";

describe("director", () => {
  it("a target names this node by its own names and addresses, or by any loopback address where the API listens on every address", () => {
    // Local mode: the API on 127.0.0.1 only; another loopback address is not this node.
    expect(refersToThisNode("127.0.0.1", ["127.0.0.1", "::1"])).toBe(true);
    expect(refersToThisNode("127.0.99.99", ["127.0.0.1", "::1"])).toBe(false);
    const names = ["10.5.0.11", "fd00::11", "node-1", "0.0.0.0"];
    for (const t of ["10.5.0.11", "node-1", "fd00::11", "[fd00::11]", "127.0.0.1", "127.0.0.11", "127.255.0.9", "::1", "[::1]", "::ffff:127.0.0.11"]) {
      expect(refersToThisNode(t, names), t).toBe(true);
    }
    for (const t of ["10.5.0.12", "node-2", "127.0.0.256", "128.0.0.1", "1127.0.0.1", "::2", "127.0.0.1.example", ""]) {
      expect(refersToThisNode(t, names), t).toBe(false);
    }
  });

  it("no routing metadata, or proxyfrom: this node", () => {
    expect(route(V, md({}), controlPlane)).toEqual({ kind: "local" });
    expect(route(V, md({ proxyfrom: "10.0.0.1:50000", nodes: ["a", "b"] }), controlPlane)).toEqual({ kind: "local" });
  });

  it("nodes: one-to-many for every target (this node too), streamed by method kind elsewhere", () => {
    expect(route(V, md({ nodes: ["10.0.0.1", "10.0.0.2"] }), controlPlane)).toMatchObject({ kind: "one2many", targets: ["10.0.0.1", "10.0.0.2"] });
    // node:http2 joins repeated fields with ", ": the list is upstream's.
    expect(route(V, md({ nodes: "10.0.0.1, 10.0.0.2" }), controlPlane)).toMatchObject({ targets: ["10.0.0.1", "10.0.0.2"] });
  });

  it("nodes on a method outside apid's one-to-many services is InvalidArgument", () => {
    expect(route(GET, md({ nodes: ["10.0.0.2"] }), controlPlane)).toEqual({
      refusal: { code: grpc.status.INVALID_ARGUMENT, details: "one-2-many proxying is not supported for method /cosi.resource.State/Get" },
    });
  });

  it("node: one-to-one, this node served here, several values refused", () => {
    expect(route(GET, md({ node: "10.0.0.2" }), controlPlane)).toEqual({ kind: "one2one", target: "10.0.0.2" });
    expect(route(GET, md({ node: "cp1" }), controlPlane)).toEqual({ kind: "local" });
    expect(route(GET, md({ node: ["a", "b"] }), controlPlane)).toEqual({ refusal: { code: grpc.status.INVALID_ARGUMENT, details: "node metadata must be single-valued" } });
  });

  it("a node without a client certificate serves itself and refuses to forward", () => {
    expect(route(V, md({ nodes: "10.0.0.5" }), worker)).toEqual({ kind: "local", echoHostname: "10.0.0.5" });
    expect(route(V, md({ node: "10.0.0.5" }), worker)).toEqual({ kind: "local" });
    const denied = { refusal: { code: grpc.status.PERMISSION_DENIED, details: "no request forwarding" } };
    expect(route(V, md({ nodes: ["10.0.0.5", "10.0.0.1"] }), worker)).toEqual(denied);
    expect(route(V, md({ node: "10.0.0.1" }), worker)).toEqual(denied);
  });

  it("a target with a port, or an empty one, is refused (the port is always 50000)", () => {
    expect(invalidTarget("10.0.0.2:50000")).toBe('invalid target "10.0.0.2:50000"');
    expect(invalidTarget("[fd00::1]:50000")).toBeDefined();
    expect(invalidTarget("fd00::1")).toBeUndefined();
    expect(invalidTarget("")).toBeDefined();
    expect(route(V, md({ nodes: ["10.0.0.2:1"] }), controlPlane)).toMatchObject({ refusal: { code: grpc.status.INTERNAL } });
  });

  it("dial addresses put IPv6 in brackets", () => {
    expect(dialAddress("10.0.0.2", 50000)).toBe("10.0.0.2:50000");
    expect(dialAddress("fd00::1", 50000)).toBe("[fd00::1]:50000");
    expect(dialAddress("node-b", 50000)).toBe("node-b:50000");
  });
});

describe("outgoing metadata", () => {
  it("drops the routing keys, carries the caller's roles in talos-role and the authority in proxyfrom", () => {
    const out = outgoingMetadata(md({ nodes: ["a", "b"], node: "a", "talos-role": "os:admin", "x-custom": "kept" }), new Set(["os:reader", "os:etcd:backup"]), "10.0.0.1:50000");
    expect(out.get("nodes")).toEqual([]);
    expect(out.get("node")).toEqual([]);
    expect(out.get("talos-role")).toEqual(["os:reader", "os:etcd:backup"]);
    expect(out.get("proxyfrom")).toEqual(["10.0.0.1:50000"]);
    expect(out.get("x-custom")).toEqual(["kept"]);
    expect(outgoingMetadata(md({}), new Set(), undefined).get("proxyfrom")).toEqual(["unknown"]);
  });
});
