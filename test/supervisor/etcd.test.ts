/**
 * Debian's etcd 3.4 with mutual TLS under the supervisor: upstream bootstrap rules, member list, status,
 * a real snapshot round trip through `etcdctl snapshot restore`, crash restart, and agent restart.
 * Needs etcd, etcdctl and openssl (no root).
 */
import { execFileSync } from "node:child_process";
import { createWriteStream, mkdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noCgroups } from "../../src/host/cgroups.js";
import { ServiceStateEventSchema, ServiceStateEvent_Action, type ServiceStateEvent } from "../../src/machinery/api/gen/machine/machine_pb.js";
import { ApiError, Code } from "../../src/machinery/errors.js";
import { EventBus } from "../../src/state/events.js";
import { LogManager } from "../../src/supervisor/logs.js";
import { EtcdService, WAITING_TO_JOIN, type EtcdPki, type EtcdServiceOptions } from "../../src/supervisor/services/etcd.js";
import { Supervisor } from "../../src/supervisor/supervisor.js";
import { eventMsgs, freePort, killByMarker, makeEtcdPki, missing, startedPid, tempDir, waitUntil } from "./helpers.js";

const skip = missing({ bins: ["etcd", "etcdctl", "openssl"] });
if (skip) console.log(`skipping etcd tests: ${skip}`);

describe.skipIf(!!skip)("etcd service", () => {
  let dir: string;
  let pki: EtcdPki;
  const bus = new EventBus(5000);
  const sups: Supervisor[] = [];
  let sup: Supervisor;
  let etcd: EtcdService;
  let ports: number[];

  const newSup = (events?: EventBus) => {
    const s = new Supervisor({ events, cgroups: noCgroups, logs: new LogManager(join(dir, `logs-${sups.length}`)), waitDescribeIntervalMs: 50 });
    sups.push(s);
    return s;
  };
  const opts = (name: string, client: number, peer: number, extra: Partial<EtcdServiceOptions> = {}): EtcdServiceOptions => ({
    stateDir: join(dir, name),
    spec: () => ({ name, advertisedAddresses: ["127.0.0.1"], listenPeerAddresses: ["127.0.0.1"], listenClientAddresses: ["127.0.0.1"], extraArgs: {} }),
    pki,
    clientPort: client,
    peerPort: peer,
    extraArgs: { "heartbeat-interval": "10", "election-timeout": "100" },
    health: { initialDelayMs: 50, periodMs: 200, timeoutMs: 3000 },
    restart: { initialDelayMs: 100, maxDelayMs: 1000 },
    gracefulStopMs: 5000,
    ...extra,
  });

  beforeAll(async () => {
    dir = tempDir("sup-etcd");
    mkdirSync(join(dir, "pki"));
    pki = makeEtcdPki(join(dir, "pki"));
    ports = [await freePort(), await freePort(), await freePort(), await freePort()];
    sup = newSup(bus);
    etcd = new EtcdService(opts("n1", ports[0], ports[1]));
    sup.load(etcd);
  });

  afterAll(async () => {
    await Promise.all(sups.map((s) => s.shutdown()));
    const stray = killByMarker(dir);
    rmSync(dir, { recursive: true, force: true });
    expect(stray).toEqual([]);
  });

  it("rejects bootstrap on workers, without machine type, and without etcd config", async () => {
    const bare = new EtcdService({ stateDir: join(dir, "bare"), spec: () => undefined });
    const s = newSup();
    const err = (p: Promise<unknown>) => p.then(() => null, (e: ApiError) => [e.code, e.message]);
    expect(await err(bare.bootstrap(s, { machineType: "worker" }))).toEqual([Code.Unimplemented, "bootstrap is only available on control plane nodes"]);
    expect(await err(bare.bootstrap(s, { machineType: undefined }))).toEqual([Code.Unimplemented, "machine type is not set, cannot use bootstrap API"]);
    expect(await err(bare.bootstrap(s, { machineType: "controlplane" }))).toEqual([Code.InvalidArgument, "etcd is not configured, bootstrap is not possible"]);
  });

  it("waits to join until bootstrapped, then runs healthy", async () => {
    sup.start("etcd");
    await waitUntil(() => eventMsgs(sup, "etcd").includes(`${WAITING_TO_JOIN} [127.0.0.1]`), 5000, "waiting message");
    await new Promise((r) => setTimeout(r, 300));
    expect(sup.info("etcd")?.state).toBe("Waiting");
    expect(eventMsgs(sup, "etcd").some((m) => m.includes("started with PID"))).toBe(false);

    await etcd.bootstrap(sup, { machineType: "controlplane" });
    await sup.waitFor("etcd", "up", AbortSignal.timeout(20_000));
    const msgs = eventMsgs(sup, "etcd");
    expect(msgs).toContain("Bootstrap requested");
    expect(msgs).toContain("Health check successful");
    expect(msgs.find((m) => m.includes("started with PID"))).toContain("--initial-cluster-state=new");

    const again = await etcd.bootstrap(sup, { machineType: "init" }).catch((e: ApiError) => e);
    expect(again).toBeInstanceOf(ApiError);
    expect((again as ApiError).code).toBe(Code.AlreadyExists);
    expect((again as ApiError).message).toBe("etcd data directory is not empty");
  });

  it("answers member list, status, alarms, defragment and the single-member rules", async () => {
    const members = await etcd.memberList();
    expect(members).toHaveLength(1);
    expect(members[0]).toMatchObject({
      hostname: "n1",
      peerUrls: [`https://127.0.0.1:${ports[1]}`],
      clientUrls: [`https://127.0.0.1:${ports[0]}`],
      isLearner: false,
    });
    expect(members[0].id).toBeGreaterThan(2n ** 53n / 1024n); // random 64-bit ids, kept exact as bigint
    const st = await etcd.status();
    expect(st.memberId).toBe(members[0].id);
    expect(st.leader).toBe(members[0].id);
    expect(st.protocolVersion).toMatch(/^3\.4\./);
    expect(st.storageVersion).toBe("3.4.0");
    expect(st.dbSize).toBeGreaterThan(0n);
    expect(st.raftIndex).toBeGreaterThan(0n);
    expect(st.raftTerm).toBeGreaterThan(0n);
    expect(await etcd.alarmList()).toEqual([]);
    expect(await etcd.alarmDisarm()).toEqual([]);
    await etcd.defragment();
    await expect(etcd.forfeitLeadership()).rejects.toThrow("failed to forfeit leadership: cannot forfeit leadership, only one member");
    const rm = await etcd.removeMemberById(12345n).catch((e: ApiError) => e);
    expect((rm as ApiError).code).toBe(Code.NotFound);
    expect((rm as ApiError).message).toBe("failed to remove member 12345: etcdserver: member not found");
    // etcd refuses to remove its only member; the service keeps running.
    await expect(etcd.leaveCluster(sup)).rejects.toThrow(
      `failed to leave cluster: failed to remove member ${st.memberId}: etcdserver: re-configuration failed due to not enough started members`,
    );
    expect(sup.info("etcd")?.state).toBe("Running");
  });

  it("streams a real snapshot that etcdctl restores into a second etcd with the same keys", async () => {
    const c = etcd.client();
    for (let i = 1; i <= 3; i++) await c.put(`/registry/test/k${i}`, `v${i}`);
    const file = join(dir, "snap.db");
    await pipeline(Readable.from(etcd.snapshot()), createWriteStream(file));
    const size = statSync(file).size;
    expect(size % 512).toBe(32);
    const status = JSON.parse(execFileSync("etcdctl", ["snapshot", "status", file, "-w", "json"], { encoding: "utf8", env: { ...process.env, ETCDCTL_API: "3" } }));
    expect(status.totalKey).toBeGreaterThanOrEqual(3);

    // The raw file restores with etcdctl directly ...
    execFileSync("etcdctl", ["snapshot", "restore", file, "--name", "raw", "--data-dir", join(dir, "raw"), "--initial-cluster", "raw=https://127.0.0.1:1", "--initial-advertise-peer-urls", "https://127.0.0.1:1"], {
      stdio: "pipe",
      env: { ...process.env, ETCDCTL_API: "3" },
    });
    // ... and through the recovery bootstrap, which runs a second etcd on other ports.
    const s2 = newSup();
    const e2 = new EtcdService(opts("n2", ports[2], ports[3]));
    s2.load(e2);
    await e2.bootstrap(s2, { machineType: "controlplane", recoverFrom: file });
    await s2.waitFor("etcd", "up", AbortSignal.timeout(20_000));
    expect(eventMsgs(s2, "etcd")).toContain(`Recovering etcd from snapshot ${file}`);
    for (let i = 1; i <= 3; i++) expect(await e2.client().get(`/registry/test/k${i}`)).toBe(`v${i}`);
    const m2 = await e2.memberList();
    expect(m2.map((m) => m.hostname)).toEqual(["n2"]);
    await e2.client().put("/after", "restore");
    expect(await etcd.client().get("/after")).toBeUndefined();
    await s2.stop("etcd");
  });

  it("restarts etcd after its process is killed and publishes the events", async () => {
    const seen: ServiceStateEvent[] = [];
    const unsub = bus.subscribe((e) => {
      if (e.schema === ServiceStateEventSchema) seen.push(e.payload as ServiceStateEvent);
    });
    const pid = startedPid(sup, "etcd");
    process.kill(pid, "SIGKILL");
    await waitUntil(() => eventMsgs(sup, "etcd").some((m) => m.includes("signal: killed") && m.includes("retrying in")), 5000, "crash event");
    await waitUntil(() => startedPid(sup, "etcd") !== pid, 10_000, "new PID");
    await sup.waitFor("etcd", "up", AbortSignal.timeout(20_000));
    await waitUntil(() => sup.info("etcd")!.health.healthy, 10_000, "healthy again");
    unsub();
    const etcdEvents = seen.filter((e) => e.service === "etcd");
    const crash = etcdEvents.findIndex((e) => e.action === ServiceStateEvent_Action.WAITING && e.message.includes("signal: killed"));
    expect(crash).toBeGreaterThanOrEqual(0);
    expect(etcdEvents.slice(crash).some((e) => e.action === ServiceStateEvent_Action.RUNNING && e.message.includes("started with PID"))).toBe(true);
    expect(await etcd.client().get("/registry/test/k1")).toBe("v1");
  });

  it("starts directly from a non-empty data directory after an agent restart", async () => {
    await sup.stop("etcd");
    expect(sup.info("etcd")?.state).toBe("Finished");
    const s3 = newSup();
    const again = new EtcdService(opts("n1", ports[0], ports[1]));
    s3.load(again);
    s3.start("etcd");
    await s3.waitFor("etcd", "up", AbortSignal.timeout(20_000));
    expect(eventMsgs(s3, "etcd").some((m) => m.startsWith(WAITING_TO_JOIN))).toBe(false);
    expect(eventMsgs(s3, "etcd").find((m) => m.includes("started with PID"))).not.toContain("--initial-cluster-state");
    expect(await again.client().get("/registry/test/k2")).toBe("v2");
    await s3.stop("etcd");
  });
});
