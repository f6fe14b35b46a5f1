/**
 * Bootstrap and the etcd APIs end to end: upstream's refusals without a machine type, without services
 * and on workers; then a control-plane node running Debian's etcd under the supervisor (on free ports,
 * no containerd): Waiting until Bootstrap, member list/status, a genuine snapshot, recovery upload, and a
 * crash restart seen on the Events stream. The etcd part needs etcd and etcdctl (not root).
 */
import { readSpec } from "../../src/machinery/resources/read.js";
import { EtcdSpecType } from "../../src/machinery/resources/types/etcd.js";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Metadata, status } from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { MachineService, ApplyConfigurationRequest_Mode as Mode, ServiceStateEventSchema, ServiceStateEvent_Action as Action } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { DataSchema, type Data } from "../../src/machinery/api/gen/common/common_pb.js";
import { RUNTIME_NS, ServiceType } from "../../src/machinery/resources/types/runtime.js";
import { WAITING_TO_JOIN } from "../../src/supervisor/index.js";
import type { TestClient } from "../helpers/client.js";
import { freePort, killByMarker, missing, tempDir } from "../supervisor/helpers.js";
import { apply, clusterConfigs, eventually, insecureClient, mtlsClient, startNode, talosconfigCreds, version, type Harness } from "./harness.js";

async function controlPlane(extra: Parameters<typeof startNode>[0] = {}): Promise<{ h: Harness; admin: TestClient }> {
  const h = await startNode(extra);
  try {
    const cfgs = await clusterConfigs();
    const c = insecureClient(h);
    await apply(c, cfgs.controlplane, Mode.AUTO);
    c.close();
    const admin = mtlsClient(h, talosconfigCreds(cfgs.talosconfig));
    await eventually(() => version(admin));
    return { h, admin };
  } catch (err) {
    await h.stop();
    throw err;
  }
}

const empty = (c: TestClient, method: string, out: Parameters<TestClient["unary"]>[3]) => c.unary(MachineService, method, EmptySchema, out, {});
const memberList = (c: TestClient) => c.unary(MachineService, "EtcdMemberList", m.EtcdMemberListRequestSchema, m.EtcdMemberListResponseSchema, { queryLocal: true });
const bootstrap = (c: TestClient) => c.unary(MachineService, "Bootstrap", m.BootstrapRequestSchema, m.BootstrapResponseSchema, {});
const serviceList = async (c: TestClient) => (await c.unary(MachineService, "ServiceList", EmptySchema, m.ServiceListResponseSchema, {})).messages[0].services;
const etcdInfo = async (c: TestClient) => (await serviceList(c)).find((s) => s.id === "etcd");
const failure = (p: Promise<unknown>) => p.then(() => null, (e: { code: number; details: string }) => ({ code: e.code, details: e.details }));

describe("etcd APIs where etcd cannot run", () => {
  let maint: Harness;
  let cp: { h: Harness; admin: TestClient };
  let worker: Harness;

  beforeAll(async () => {
    [maint, cp, worker] = await Promise.all([startNode(), controlPlane(), startNode({ services: true, serviceOptions: { containerd: false } })]);
    const c = insecureClient(worker);
    await apply(c, (await clusterConfigs()).worker, Mode.AUTO);
    c.close();
  });
  afterAll(async () => {
    cp?.admin.close();
    await Promise.all([maint?.stop(), cp?.h.stop(), worker?.stop()]);
  });

  it("answers Unimplemented without a machine type, naming the API like upstream", async () => {
    const c = insecureClient(maint);
    expect(await failure(memberList(c))).toEqual({ code: status.UNIMPLEMENTED, details: "machine type is not set, cannot use member list API" });
    expect(await failure(empty(c, "EtcdStatus", m.EtcdStatusResponseSchema))).toEqual({
      code: status.UNIMPLEMENTED,
      details: "machine type is not set, cannot use etcd status API",
    });
    expect(await failure(empty(c, "EtcdAlarmList", m.EtcdAlarmListResponseSchema))).toEqual({
      code: status.UNIMPLEMENTED,
      details: "machine type is not set, cannot use etcd alarm list API",
    });
    c.close();
  });

  it("refuses Bootstrap on a control plane whose services are off, and reports etcd missing", async () => {
    expect(await failure(bootstrap(cp.admin))).toEqual({ code: status.FAILED_PRECONDITION, details: "bootstrap is not available yet" });
    expect(await failure(memberList(cp.admin))).toEqual({ code: status.UNAVAILABLE, details: "etcd is not running on this node" });
  });

  it("loads no etcd on a worker (and no containerd when told so)", async () => {
    await eventually(async () => expect(worker.node.node.activeConfig?.machineType()).toBe("worker"));
    expect(worker.node.services.supervisor.list().map((s) => s.id)).toEqual(["apid", "machined"]);
    expect(worker.node.node.status.current.status.unmetConditions.find((u) => u.name === "services")).toBeUndefined();
  });
});

const skip = missing({ bins: ["etcd", "etcdctl"] });
if (skip) console.log(`skipping etcd API tests: ${skip}`);

/** Events stream the test cancels itself; collects ServiceStateEvents. */
function watchServiceEvents(c: TestClient) {
  const seen: m.ServiceStateEvent[] = [];
  const call = c.raw.makeServerStreamRequest(
    "/machine.MachineService/Events",
    (x: m.EventsRequest) => Buffer.from(toBinary(m.EventsRequestSchema, x)),
    (b: Buffer) => fromBinary(m.EventSchema, b),
    create(m.EventsRequestSchema, {}),
    new Metadata(),
    {},
  );
  call.on("data", (e: m.Event) => {
    if (e.data?.typeUrl === "talos/runtime/machine.ServiceStateEvent") seen.push(fromBinary(ServiceStateEventSchema, e.data.value));
  });
  call.on("error", () => undefined);
  return { seen, cancel: () => call.cancel() };
}

function upload(c: TestClient, chunks: Uint8Array[]): Promise<m.EtcdRecoverResponse> {
  return new Promise((resolve, reject) => {
    const call = c.raw.makeClientStreamRequest(
      "/machine.MachineService/EtcdRecover",
      (x: Data) => Buffer.from(toBinary(DataSchema, x)),
      (b: Buffer) => fromBinary(m.EtcdRecoverResponseSchema, b),
      new Metadata(),
      {},
      (err, res) => (err ? reject(err) : resolve(res as m.EtcdRecoverResponse)),
    );
    for (const bytes of chunks) call.write(create(DataSchema, { bytes }));
    call.end();
  });
}

const startedPid = (msgs: string[]) => Number(/started with PID (\d+)/.exec(msgs.filter((x) => /started with PID/.test(x)).at(-1) ?? "")?.[1] ?? 0);

describe.skipIf(!!skip)("etcd on a control plane", () => {
  let h: Harness;
  let admin: TestClient;
  let work: string;

  beforeAll(async () => {
    work = tempDir("etcd-api");
    const [clientPort, peerPort] = [await freePort(), await freePort()];
    ({ h, admin } = await controlPlane({
      services: true,
      serviceOptions: {
        containerd: false,
        etcd: {
          clientPort,
          peerPort,
          extraArgs: { "heartbeat-interval": "10", "election-timeout": "100" },
          health: { initialDelayMs: 100, periodMs: 500, timeoutMs: 5000 },
          restart: { initialDelayMs: 200, maxDelayMs: 1000 },
          gracefulStopMs: 5000,
        },
      },
    }));
  });
  afterAll(async () => {
    admin?.close();
    const dir = h?.stateDir;
    await h?.stop();
    rmSync(work, { recursive: true, force: true });
    // Every daemon of this node was stopped by its own shutdown.
    if (dir) expect(killByMarker(dir)).toEqual([]);
  });

  it("waits for Bootstrap, visibly, and the node is not ready meanwhile", async () => {
    await eventually(async () => {
      const etcd = await etcdInfo(admin);
      expect(etcd?.state).toBe("Waiting");
      const msgs = etcd?.events?.events.map((e) => e.msg) ?? [];
      expect(msgs.some((x) => x.startsWith(WAITING_TO_JOIN))).toBe(true);
      // Meanwhile it tries to join through the control-plane endpoints (this node itself, whose etcd is not up: the
      // configured endpoint and, through discovery, its own addresses as a control-plane member), naming each one.
      expect(msgs.at(-1)).toMatch(/^etcd join attempt failed: error getting etcd member list: (no etcd endpoint answered: .*)?etcd is not reachable at https:\/\/127\.0\.0\.1:\d+: connect ECONNREFUSED/);
    }, 10_000);
    expect(h.node.node.status.current.status.unmetConditions).toContainEqual({ name: "services", reason: "etcd not running" });
    expect(h.node.node.state.get({ namespace: RUNTIME_NS, type: ServiceType.type, id: "etcd" })).toBeUndefined();
    expect((await failure(memberList(admin)))?.code).toBe(status.UNAVAILABLE);
  });

  it("bootstraps once; a second Bootstrap finds the data directory in use", async () => {
    const res = await bootstrap(admin);
    expect(res.messages).toHaveLength(1);
    await eventually(async () => {
      const etcd = await etcdInfo(admin);
      expect(etcd?.state).toBe("Running");
      expect(etcd?.health?.healthy).toBe(true);
    }, 30_000);
    expect((await etcdInfo(admin))?.events?.events.map((e) => e.msg)).toContain("Bootstrap requested");
    expect(h.node.node.state.get({ namespace: RUNTIME_NS, type: ServiceType.type, id: "etcd" })?.spec).toEqual({ running: true, healthy: true, unknown: false });
    await eventually(async () => expect(h.node.node.status.current.status.unmetConditions.find((u) => u.name === "services")).toBeUndefined());
    expect(await failure(bootstrap(admin))).toEqual({ code: status.ALREADY_EXISTS, details: "etcd data directory is not empty" });
  }, 40_000);

  it("answers member list, status, alarms, defragment and forfeit", async () => {
    const list = (await memberList(admin)).messages[0];
    expect(list.members).toHaveLength(1);
    const me = list.members[0];
    expect(typeof me.id).toBe("bigint");
    expect(me.id).toBeGreaterThan(0n);
    expect(me.isLearner).toBe(false);
    // The member is what EtcdSpec says: the short hostname, advertising the node's first routed address.
    const spec = readSpec(h.node.state, EtcdSpecType, "etcd")!;
    expect(me.hostname).toBe(spec.name);
    expect(me.peerUrls).toEqual([`https://${spec.advertisedAddresses[0]}:${new URL(me.peerUrls[0]).port}`]);
    expect(list.legacyMembers).toEqual([me.hostname]);
    const st = (await empty(admin, "EtcdStatus", m.EtcdStatusResponseSchema)) as m.EtcdStatusResponse;
    const ms = st.messages[0].memberStatus!;
    expect(ms.memberId).toBe(me.id);
    expect(ms.leader).toBe(me.id);
    expect(ms.protocolVersion).toMatch(/^3\./);
    expect(ms.storageVersion).toMatch(/^3\.\d+\.0$/);
    expect(ms.dbSize).toBeGreaterThan(0n);
    const alarms = (await empty(admin, "EtcdAlarmList", m.EtcdAlarmListResponseSchema)) as m.EtcdAlarmListResponse;
    expect(alarms.messages[0].memberAlarms).toEqual([]);
    expect(((await empty(admin, "EtcdDefragment", m.EtcdDefragmentResponseSchema)) as m.EtcdDefragmentResponse).messages).toHaveLength(1);
    const forfeit = await failure(
      admin.unary(MachineService, "EtcdForfeitLeadership", m.EtcdForfeitLeadershipRequestSchema, m.EtcdForfeitLeadershipResponseSchema, {}),
    );
    expect(forfeit?.details).toBe("failed to forfeit leadership: cannot forfeit leadership, only one member");
  });

  it("streams a genuine snapshot that etcdctl restores, and accepts a recovery upload", async () => {
    const msgs = await admin.stream(MachineService, "EtcdSnapshot", m.EtcdSnapshotRequestSchema, DataSchema, {}, { deadlineMs: 30_000 });
    const snap = Buffer.concat(msgs.map((d) => d.bytes));
    expect(snap.length % 512).toBe(32);
    const file = join(work, "snap.db");
    writeFileSync(file, snap);
    const env = { ...process.env, ETCDCTL_API: "3" };
    const restored = join(work, "restored");
    execFileSync("etcdctl", ["snapshot", "restore", file, "--data-dir", restored, "--name", "r", "--initial-cluster", "r=https://127.0.0.1:1", "--initial-advertise-peer-urls", "https://127.0.0.1:1"], {
      stdio: "pipe",
      env,
    });
    expect(existsSync(join(restored, "member", "snap", "db"))).toBe(true);

    // talosctl bootstrap --recover-from uploads 4 KiB chunks before calling Bootstrap.
    const chunks: Uint8Array[] = [];
    for (let off = 0; off < snap.length; off += 4096) chunks.push(snap.subarray(off, off + 4096));
    const res = await upload(admin, chunks);
    expect(res.messages).toHaveLength(1);
    const dest = h.node.services.etcd!.recoverySnapshotPath;
    expect(readFileSync(dest).equals(snap)).toBe(true);
    rmSync(dest);
  });

  it("restarts etcd after its process is killed, with the events on the Events stream", async () => {
    const w = watchServiceEvents(admin);
    try {
      await new Promise((r) => setTimeout(r, 200));
      const pid = startedPid((await etcdInfo(admin))!.events!.events.map((e) => e.msg));
      expect(pid).toBeGreaterThan(0);
      process.kill(pid, "SIGKILL");
      await eventually(async () => {
        const etcd = w.seen.filter((e) => e.service === "etcd");
        expect(etcd.some((e) => /killed/.test(e.message))).toBe(true);
        const started = etcd.filter((e) => e.action === Action.RUNNING && /started with PID/.test(e.message));
        expect(started.length).toBeGreaterThan(0);
        expect(startedPid(started.map((e) => e.message))).not.toBe(pid);
      }, 20_000);
      // Same data: the member survives the crash.
      await eventually(async () => expect((await memberList(admin)).messages[0].members).toHaveLength(1), 20_000);
    } finally {
      w.cancel();
    }
  }, 45_000);
});
