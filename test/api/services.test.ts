/**
 * ServiceList / ServiceStart/Stop/Restart / Logs / LogsContainers over mTLS on a configured node, plus
 * containerd under the supervisor (Containers, Stats, Logs) when the host can run it (root + binaries).
 */
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Metadata, status } from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { MachineService, ApplyConfigurationRequest_Mode as Mode } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { ContainerDriver, DataSchema } from "../../src/machinery/api/gen/common/common_pb.js";
import { RUNTIME_NS, ServiceType } from "../../src/machinery/resources/types/runtime.js";
import { ProcessRunner, type Service } from "../../src/supervisor/index.js";
import type { TestClient } from "../helpers/client.js";
import { freePort } from "../supervisor/helpers.js";
import { apply, clusterConfigs, eventually, insecureClient, mtlsClient, startNode, talosconfigCreds, version, type Harness } from "./harness.js";

const testService: Service = {
  id: "testsvc",
  api: { start: true, stop: true, restart: true },
  runner: () => new ProcessRunner({ args: ["sh", "-c", "echo hello from testsvc; exec sleep 1000"], gracefulStopMs: 2000 }),
};

/** A control plane (it runs trustd; a worker would wait for a control plane's trustd to sign its API certificate). */
async function configuredNode(cfg: "controlplane", extra: Parameters<typeof startNode>[0] = {}): Promise<{ h: Harness; admin: TestClient }> {
  const h = await startNode(extra);
  try {
    const cfgs = await clusterConfigs();
    const c = insecureClient(h);
    await apply(c, cfgs[cfg], Mode.AUTO);
    c.close();
    const admin = mtlsClient(h, talosconfigCreds(cfgs.talosconfig));
    await eventually(() => version(admin));
    return { h, admin };
  } catch (err) {
    // afterAll never sees a node that failed to come up: stop its daemons here.
    await h.stop();
    throw err;
  }
}

const serviceList = async (c: TestClient) =>
  (await c.unary(MachineService, "ServiceList", EmptySchema, m.ServiceListResponseSchema, {})).messages[0].services;

const logs = (c: TestClient, req: Partial<{ namespace: string; id: string; follow: boolean; tailLines: number; driver: ContainerDriver }>, opts = {}) =>
  c.stream(MachineService, "Logs", m.LogsRequestSchema, DataSchema, { namespace: "system", tailLines: -1, ...req }, { deadlineMs: 20_000, ...opts });

/** A server stream the test cancels itself (talosctl -f then Ctrl-C). */
function follow(c: TestClient, req: Parameters<typeof logs>[1]) {
  const call = c.raw.makeServerStreamRequest(
    "/machine.MachineService/Logs",
    (x: m.LogsRequest) => Buffer.from(toBinary(m.LogsRequestSchema, x)),
    (b: Buffer) => fromBinary(DataSchema, b),
    create(m.LogsRequestSchema, { namespace: "system", tailLines: -1, ...req }),
    new Metadata(),
    {},
  );
  let got = "";
  call.on("data", (d: { bytes: Uint8Array }) => (got += Buffer.from(d.bytes).toString()));
  const ended = new Promise<number>((resolve) => {
    call.on("error", (e: { code: number }) => resolve(e.code));
    call.on("end", () => resolve(-1));
  });
  return { text: () => got, cancel: () => call.cancel(), ended };
}

const text = (msgs: { bytes: Uint8Array }[]) => Buffer.concat(msgs.map((x) => x.bytes)).toString();

describe("services without daemons", () => {
  let h: Harness;
  let admin: TestClient;

  beforeAll(async () => {
    ({ h, admin } = await configuredNode("controlplane"));
    h.node.services.supervisor.load(testService);
    h.node.services.supervisor.start("testsvc");
    await h.node.services.supervisor.waitFor("testsvc", "up", AbortSignal.timeout(10_000));
    // The in-process services settle (health checks pass) before the log tests follow machined's log, where
    // every service transition is written.
    for (const id of ["apid", "trustd"]) await h.node.services.supervisor.waitFor(id, "up", AbortSignal.timeout(15_000));
  });
  afterAll(async () => {
    admin?.close();
    await h?.stop();
  });

  it("lists every service with events and health", async () => {
    const list = await serviceList(admin);
    // Upstream's names: apid on every configured node, trustd on control planes.
    expect(list.map((s) => s.id)).toEqual(["apid", "machined", "testsvc", "trustd"]);
    for (const s of list) {
      expect(s.events?.events.length).toBeGreaterThan(0);
      expect(s.events?.events.at(-1)?.ts).toBeDefined();
      expect(s.health).toBeDefined();
    }
    for (const s of list.filter((x) => x.id === "machined" || x.id === "testsvc")) {
      expect(s.state).toBe("Running");
      expect(s.health?.unknown).toBe(true);
    }
    // apid's and trustd's health checks dial their ports (50000, 50001 upstream), as upstream's do.
    await eventually(async () => {
      const now = await serviceList(admin);
      for (const id of ["apid", "trustd"]) {
        expect(now.find((s) => s.id === id)).toMatchObject({ state: "Running", health: { unknown: false, healthy: true } });
      }
    }, 10_000);
    const trustd = (await serviceList(admin)).find((s) => s.id === "trustd")!;
    expect(trustd.events?.events.map((e) => e.msg)).toEqual(expect.arrayContaining(["Waiting for trustd certificate", "Service started as goroutine"]));
    expect(text(await logs(admin, { id: "trustd" }))).toMatch(/trustd: serving on 127\.0\.0\.1:\d+/);
    // Daemons stay off in this harness: nothing but the two above.
    expect(h.node.services.enabled).toBe(false);
  });

  it("publishes a Service resource only while the service is running", async () => {
    const ptr = { namespace: RUNTIME_NS, type: ServiceType.type, id: "testsvc" };
    expect(h.node.node.state.get(ptr)?.spec).toEqual({ running: true, healthy: false, unknown: true });
    const stop = await admin.unary(MachineService, "ServiceStop", m.ServiceStopRequestSchema, m.ServiceStopResponseSchema, { id: "testsvc" });
    expect(stop.messages[0].resp).toBe('Service "testsvc" stopped');
    expect(h.node.node.state.get(ptr)).toBeUndefined();
    expect((await serviceList(admin)).find((s) => s.id === "testsvc")?.state).toBe("Finished");
    const start = await admin.unary(MachineService, "ServiceStart", m.ServiceStartRequestSchema, m.ServiceStartResponseSchema, { id: "testsvc" });
    expect(start.messages[0].resp).toBe('Service "testsvc" started');
    await eventually(async () => expect(h.node.node.state.get(ptr)?.spec).toMatchObject({ running: true }));
  });

  it("restarts a service through the API with a new process", async () => {
    const pids = () => h.node.services.supervisor.info("testsvc")!.events.filter((e) => /started with PID/.test(e.msg)).length;
    await h.node.services.supervisor.waitFor("testsvc", "up", AbortSignal.timeout(10_000));
    const before = pids();
    const res = await admin.unary(MachineService, "ServiceRestart", m.ServiceRestartRequestSchema, m.ServiceRestartResponseSchema, { id: "testsvc" });
    expect(res.messages[0].resp).toBe('Service "testsvc" restarted');
    await eventually(async () => expect(pids()).toBe(before + 1), 10_000);
    const states = h.node.services.supervisor.info("testsvc")!.events.slice(-6).map((e) => e.state);
    expect(states.slice(0, 2)).toEqual(["Stopping", "Finished"]);
    expect(states.at(-1)).toBe("Running");
  });

  it("refuses what a service does not allow, and unknown ids, with upstream texts", async () => {
    const restart = (id: string) =>
      admin.unary(MachineService, "ServiceRestart", m.ServiceRestartRequestSchema, m.ServiceRestartResponseSchema, { id }).catch((e) => e);
    expect(await restart("machined")).toMatchObject({ code: status.UNKNOWN, details: 'service "machined" doesn\'t support restart operation via API' });
    expect(await restart("nope")).toMatchObject({ code: status.UNKNOWN, details: 'service "nope" not defined' });
  });

  it("serves service logs: everything, the last N lines, and a registered-id list", async () => {
    const all = text(await logs(admin, { id: "machined" }));
    expect(all).toContain("service[machined](Running)");
    expect(all).toContain("service[testsvc](Running)");
    const lines = all.trimEnd().split("\n");
    expect(lines.length).toBeGreaterThan(3);
    const last2 = text(await logs(admin, { id: "machined", tailLines: 2 })).trimEnd().split("\n");
    // The previous Logs call itself was logged when it ended (one line per API call, as upstream).
    expect(last2).toHaveLength(2);
    expect(last2[0]).toBe(lines.at(-1));
    expect(last2[1]).toMatch(/^\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d OK \[\/machine\.MachineService\/Logs\] [\d.]+(µs|ms|s) stream Success \(/);
    expect(text(await logs(admin, { id: "testsvc" }))).toContain("hello from testsvc");
    // A log nobody wrote is an error (upstream: `log "x" was not registered`); behind a `nodes` request it
    // arrives as one message with metadata.error, which talosctl prints as `ERROR: ...` and exits 1.
    expect(await logs(admin, { id: "never-registered" }).catch((e) => e)).toMatchObject({
      code: status.UNKNOWN,
      details: 'log "never-registered" was not registered',
    });
    expect(await logs(admin, { id: "never-registered", follow: true }).catch((e) => e)).toMatchObject({ code: status.UNKNOWN });
    const viaNodes = await logs(admin, { id: "never-registered" }, { metadata: { nodes: "127.0.0.1" } });
    expect(viaNodes).toHaveLength(1);
    expect(viaNodes[0].metadata).toMatchObject({
      hostname: "127.0.0.1",
      error: 'rpc error: code = Unknown desc = log "never-registered" was not registered',
    });
    const ids = await admin.unary(MachineService, "LogsContainers", EmptySchema, m.LogsContainersResponseSchema, {});
    expect(ids.messages[0].ids).toEqual(expect.arrayContaining(["machined", "testsvc"]));
    expect(ids.messages[0].ids).not.toContain("never-registered");
  });

  it("logs every API call in apid and machined; tail gives exactly N lines (upstream TestTail)", async () => {
    for (let i = 0; i < 20; i++) await version(admin);
    for (const n of [0, 1, 10]) {
      const got = text(await logs(admin, { id: "apid", tailLines: n }));
      expect(got.split("\n").filter(Boolean)).toHaveLength(n);
      expect(got.length === 0 || got.endsWith("\n")).toBe(true);
    }
    const last = text(await logs(admin, { id: "apid", tailLines: 12 })).trimEnd().split("\n");
    // The three tail calls above came last; the Version calls before them.
    expect(last.slice(-3).every((l) => / OK \[\/machine\.MachineService\/Logs\] .* stream Success \(/.test(l))).toBe(true);
    expect(last.slice(0, 9).every((l) => / OK \[\/machine\.MachineService\/Version\] .* unary Success \(/.test(l))).toBe(true);
    const machined = text(await logs(admin, { id: "machined", tailLines: 30 }));
    expect(machined).toMatch(/OK \[\/machine\.MachineService\/Version\]/);
    // A failed call is logged with Go's error text.
    await admin.unary(MachineService, "ServiceRestart", m.ServiceRestartRequestSchema, m.ServiceRestartResponseSchema, { id: "nope" }).catch(() => {});
    expect(text(await logs(admin, { id: "apid", tailLines: 2 }))).toContain(
      'Unknown [/machine.MachineService/ServiceRestart] ',
    );
  });

  it("streams machined's log: tail 3 first, then a line for a call made while following (upstream TestStreaming)", async () => {
    const f = follow(admin, { id: "machined", follow: true, tailLines: 3 });
    await eventually(async () => expect(f.text().split("\n").filter(Boolean).length).toBeGreaterThanOrEqual(3));
    await new Promise((r) => setTimeout(r, 200));
    expect(f.text().split("\n").filter(Boolean)).toHaveLength(3);
    await admin.unary(MachineService, "Stats", m.StatsRequestSchema, m.StatsResponseSchema, { namespace: "system" }).catch(() => {});
    await eventually(async () => expect(f.text()).toMatch(/\[\/machine\.MachineService\/Stats\]/));
    f.cancel();
    expect(await f.ended).toBe(status.CANCELLED);
  });

  it("follows a log until the client cancels", async () => {
    const f = follow(admin, { id: "machined", follow: true, tailLines: 0 });
    // Nothing old with tail 0; the restart below writes new transition lines while we follow.
    await new Promise((r) => setTimeout(r, 300));
    expect(f.text()).toBe("");
    await admin.unary(MachineService, "ServiceRestart", m.ServiceRestartRequestSchema, m.ServiceRestartResponseSchema, { id: "testsvc" });
    await eventually(async () => expect(f.text()).toMatch(/service\[testsvc\]\(Stopping\)[\s\S]*service\[testsvc\]\(Running\)/), 10_000);
    // Still open: only the client ends a follow.
    const raced = await Promise.race([f.ended, new Promise((r) => setTimeout(() => r("open"), 300))]);
    expect(raced).toBe("open");
    f.cancel();
    expect(await f.ended).toBe(status.CANCELLED);
    // The server side let go of the follower: the node keeps serving normally.
    expect((await serviceList(admin)).length).toBe(4);
  });

  it("reports containerd as not running where it is not supervised", async () => {
    const err = await admin
      .unary(MachineService, "Containers", m.ContainersRequestSchema, m.ContainersResponseSchema, { namespace: "system" })
      .catch((e) => e);
    expect(err).toMatchObject({ code: status.UNAVAILABLE, details: "containerd is not running on this node" });
    const empty = await admin.unary(MachineService, "Containers", m.ContainersRequestSchema, m.ContainersResponseSchema, { namespace: "" }).catch((e) => e);
    expect(empty).toMatchObject({ code: status.INVALID_ARGUMENT, details: "namespace can't be empty" });
    const cri = await admin
      .unary(MachineService, "Containers", m.ContainersRequestSchema, m.ContainersResponseSchema, { namespace: "system", driver: ContainerDriver.CRI })
      .catch((e) => e);
    expect(cri).toMatchObject({ details: "CRI inspector is supported only for K8s namespace" });
  });
});

function skipReason(): string | null {
  if (process.getuid?.() !== 0) return "needs root";
  for (const b of ["containerd", "ctr", "runc"]) {
    try {
      execFileSync("sh", ["-c", `command -v ${b}`], { stdio: "pipe" });
    } catch {
      return `binary ${b} not installed`;
    }
  }
  return null;
}
const skip = skipReason();
if (skip) console.log(`skipping containerd service API tests: ${skip}`);

describe.skipIf(!!skip)("containerd under the supervisor", () => {
  let h: Harness;
  let admin: TestClient;

  beforeAll(async () => {
    // etcd is loaded too (control plane) and just waits for Bootstrap, on ports nothing else uses.
    const etcd = { clientPort: await freePort(), peerPort: await freePort() };
    ({ h, admin } = await configuredNode("controlplane", { services: true, serviceOptions: { containerd: { cri: false }, etcd } }));
  });
  afterAll(async () => {
    admin?.close();
    await h?.stop();
  });

  it("runs containerd healthy; readiness then only waits for etcd", async () => {
    await eventually(async () => {
      const c = (await serviceList(admin)).find((s) => s.id === "containerd");
      expect(c?.state).toBe("Running");
      expect(c?.health?.healthy).toBe(true);
    }, 30_000);
    expect((await serviceList(admin)).map((s) => s.id)).toEqual(["apid", "containerd", "etcd", "machined", "trustd"]);
    await eventually(async () =>
      expect(h.node.node.status.current.status.unmetConditions).toContainEqual({ name: "services", reason: "etcd not running" }),
    );
  }, 40_000);

  it("lists containers and stats of the system namespace, and serves containerd's log", async () => {
    const res = await admin.unary(MachineService, "Containers", m.ContainersRequestSchema, m.ContainersResponseSchema, { namespace: "system" });
    expect(res.messages[0].containers).toEqual([]);
    const stats = await admin.unary(MachineService, "Stats", m.StatsRequestSchema, m.StatsResponseSchema, { namespace: "k8s.io", driver: ContainerDriver.CRI });
    expect(stats.messages[0].stats).toEqual([]);
    const restart = await admin
      .unary(MachineService, "Restart", m.RestartRequestSchema, m.RestartResponseSchema, { namespace: "system", id: "ghost" })
      .catch((e) => e);
    expect(restart).toMatchObject({ code: status.UNKNOWN, details: 'container "ghost" not found' });
    expect(text(await logs(admin, { id: "containerd" }))).toMatch(/containerd successfully booted|serving/);
  });
});
