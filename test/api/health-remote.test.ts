/**
 * Another node's reads for the cluster health check, against a real node's API (mTLS with the node's own
 * impersonator client certificate, the caller's roles as talos-role): each read decodes what the node's
 * handlers send and agrees with that node's state; a failure is the status as upstream's client prints it;
 * a node that does not answer fails the read at its deadline.
 */
import * as net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Forwarder } from "../../src/api/forward/forwarder.js";
import { remoteNodeReads } from "../../src/api/handlers/health-remote.js";
import { localNodeReads, NodeReadError } from "../../src/lifecycle/health/reads.js";
import { Code } from "../../src/machinery/errors.js";
import { newResource } from "../../src/machinery/resources/resource.js";
import { readAll, readSpec } from "../../src/machinery/resources/read.js";
import { VolumeStatusType } from "../../src/machinery/resources/types/block.js";
import { K8S_NS, StaticPodStatusType } from "../../src/machinery/resources/types/k8s.js";
import { MachineStatusType, ServiceType } from "../../src/machinery/resources/types/runtime.js";
import { DiagnosticType } from "../../src/machinery/resources/types/security.js";
import { Role } from "../../src/machinery/role.js";
import type { TestClient } from "../helpers/client.js";
import { applyControlPlane, apply, eventually, mtlsClient, startNode, talosconfigCreds, version, type Harness } from "./harness.js";

let h: Harness;
let admin: TestClient;
let fwd: Forwarder;
const TARGET = "127.0.0.1";
const reads = (roles: string[] = [Role.Reader], timeoutMs?: number) => remoteNodeReads(fwd, TARGET, { roles: new Set(roles), timeoutMs });

beforeAll(async () => {
  h = await startNode();
  const cfgs = await applyControlPlane(h);
  admin = mtlsClient(h, talosconfigCreds(cfgs.talosconfig));
  await eventually(() => version(admin), 20_000);
  // The node dials itself: its own client certificate, its own API port.
  fwd = new Forwarder(h.node.state, () => false, { port: h.node.port });
  await eventually(async () => {
    if (!fwd.canForward()) throw new Error("no client certificate yet");
  }, 20_000);
}, 60_000);
afterAll(async () => {
  fwd?.close();
  admin?.close();
  await h?.stop();
});

describe("remote node reads through forwarding", () => {
  it("Version, ServiceList and Memory: what the node itself says", async () => {
    const r = reads();
    const own = (await version(admin)).messages[0];
    expect(await r.platformMode()).toBe(own.platform?.mode ?? "");
    const local = localNodeReads({ state: h.node.state, platformMode: "", memTotalKiB: async () => 0 });
    const ids = readAll(h.node.state, ServiceType).map((s) => s.metadata.id);
    expect(ids.length).toBeGreaterThan(0);
    for (const id of ids) expect(await r.service(id), id).toEqual(await local.service(id));
    expect(await r.service("no-such-service")).toBeUndefined();
    expect(await r.memTotalKiB()).toBeGreaterThan(100 * 1024);
  });

  it("COSI Get and List: the MachineStatus stage, Diagnostics, StaticPodStatuses and the EPHEMERAL volume from their YAML specs", async () => {
    const state = h.node.state;
    const r = reads();
    expect(await r.stage()).toBe(readSpec(state, MachineStatusType, "machine")?.stage ?? "unknown");
    expect(await r.diagnostics()).toEqual([]);
    state.apply(newResource({ namespace: DiagnosticType.defaultNamespace, type: DiagnosticType.type, id: "test-diag" }, { message: "something is off", details: ["a"] }), "test");
    expect(await r.diagnostics()).toEqual(["something is off"]);
    for (const c of ["kube-apiserver", "kube-scheduler"]) {
      state.apply(newResource({ namespace: K8S_NS, type: StaticPodStatusType.type, id: `kube-system/${c}-n1` }, { phase: "Running", conditions: [] }), "test");
    }
    expect((await r.staticPodIds()).sort()).toEqual(["kube-system/kube-apiserver-n1", "kube-system/kube-scheduler-n1"]);
    // Local mode's EPHEMERAL is a directory volume with its measured size.
    const vs = readSpec(state, VolumeStatusType, "EPHEMERAL");
    expect(vs?.location).toBeTruthy();
    expect(await r.ephemeral()).toEqual({ size: vs?.size ?? 0, location: vs?.location });
  });

  it("a failure reads as upstream's client error; the caller's roles are the ones the node authorizes", async () => {
    // No etcd runs on this node.
    const etcd = await reads().etcdMembers().catch((e: unknown) => e);
    expect(etcd).toBeInstanceOf(NodeReadError);
    expect((etcd as Error).message).toMatch(/^rpc error: code = \w+ desc = ./);
    const none = await reads([]).platformMode().catch((e: unknown) => e);
    expect(none).toMatchObject({ code: Code.PermissionDenied, message: "rpc error: code = PermissionDenied desc = not authorized" });
  });

  it("a node that accepts connections and never answers fails the read at its deadline; a cancelled read says so", async () => {
    const held: net.Socket[] = [];
    const silent = net.createServer((s) => void held.push(s));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const port = (silent.address() as net.AddressInfo).port;
    const mute = new Forwarder(h.node.state, () => false, { port });
    try {
      const started = Date.now();
      const err = await remoteNodeReads(mute, TARGET, { roles: new Set([Role.Reader]), timeoutMs: 300 }).platformMode().catch((e: unknown) => e);
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(err).toMatchObject({ code: Code.DeadlineExceeded, message: "rpc error: code = DeadlineExceeded desc = context deadline exceeded" });
      const ac = new AbortController();
      const pending = remoteNodeReads(mute, TARGET, { roles: new Set([Role.Reader]), signal: ac.signal }).stage();
      setTimeout(() => ac.abort(new Error("call cancelled")), 50);
      await expect(pending).rejects.toMatchObject({ code: Code.Canceled, message: "rpc error: code = Canceled desc = context canceled" });
    } finally {
      mute.close();
      for (const s of held) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
