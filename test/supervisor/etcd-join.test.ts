/**
 * Control planes joining etcd by themselves, against real members: Debian's etcd 3.4 processes with mutual TLS on
 * free loopback ports, each under its own supervisor (no containers). One is bootstrapped; the others join as
 * learners through the control-plane endpoints and are promoted; a second bootstrap is refused; a node that comes
 * back with an empty data directory replaces its stale entry; a node with the wrong etcd CA is refused with the
 * TLS error and the endpoint, adds nothing, and joins once its PKI is fixed; leaving and removing by id shrink the
 * cluster. Needs etcd and openssl (no root).
 */
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noCgroups } from "../../src/host/cgroups.js";
import { ApiError, Code } from "../../src/machinery/errors.js";
import { EtcdClient, type EtcdMemberInfo } from "../../src/supervisor/etcd/client.js";
import { addMember, defaultJoinSettings, type JoinEnv } from "../../src/supervisor/etcd/join.js";
import { LogManager } from "../../src/supervisor/logs.js";
import { EtcdService, WAITING_TO_JOIN, type EtcdPki, type EtcdServiceOptions } from "../../src/supervisor/services/etcd.js";
import { Supervisor } from "../../src/supervisor/supervisor.js";
import { eventMsgs, freePort, killByMarker, makeEtcdPki, missing, tempDir, waitUntil } from "./helpers.js";

const skip = missing({ bins: ["etcd", "openssl"] });
if (skip) console.log(`skipping etcd join tests: ${skip}`);

interface Member {
  name: string;
  client: number;
  peer: number;
  sup: Supervisor;
  etcd: EtcdService;
  pki: EtcdPki;
}

describe.skipIf(!!skip)("etcd join", () => {
  let dir: string;
  let pki: EtcdPki;
  let wrongPki: EtcdPki;
  const nodes = new Map<string, Member>();
  let endpoints: string[] = [];
  const sups: Supervisor[] = [];

  /** A control plane on its own ports; it joins through `endpoints` (what the Endpoints resources would say). */
  const node = async (name: string, extra: Partial<EtcdServiceOptions> = {}, withPki: EtcdPki = pki): Promise<Member> => {
    const [client, peer] = [await freePort(), await freePort()];
    const sup = new Supervisor({ cgroups: noCgroups, logs: new LogManager(join(dir, `logs-${name}-${sups.length}`)), waitDescribeIntervalMs: 50 });
    sups.push(sup);
    const m: Member = { name, client, peer, sup, pki: withPki, etcd: undefined as unknown as EtcdService };
    m.etcd = new EtcdService({
      stateDir: join(dir, name),
      spec: () => ({ name, advertisedAddresses: ["127.0.0.1"], listenPeerAddresses: ["127.0.0.1"], listenClientAddresses: ["127.0.0.1"], extraArgs: {} }),
      pki: () => m.pki,
      controlPlaneEndpoints: () => endpoints.filter((e) => e !== `127.0.0.1:${client}`),
      clientPort: client,
      peerPort: peer,
      extraArgs: { "heartbeat-interval": "10", "election-timeout": "100" },
      health: { initialDelayMs: 50, periodMs: 200, timeoutMs: 3000 },
      restart: { initialDelayMs: 100, maxDelayMs: 1000 },
      gracefulStopMs: 5000,
      join: { retryMs: 200, jitterMs: 50, attemptTimeoutMs: 5000, nagMs: 1000, promoteRetryMs: 200, promoteAttemptTimeoutMs: 5000 },
      ...extra,
    });
    sup.load(m.etcd);
    nodes.set(name, m);
    return m;
  };
  const admin = () => new EtcdClient(endpoints, { ca: pki.ca, cert: pki.clientCert, key: pki.clientKey });
  const members = async (): Promise<EtcdMemberInfo[]> => {
    const c = admin();
    try {
      return (await c.memberList()).sort((a, b) => a.hostname.localeCompare(b.hostname));
    } finally {
      c.close();
    }
  };
  const summary = async () => (await members()).map((m) => `${m.hostname || "?"}${m.isLearner ? " (learner)" : ""}`);
  /**
   * A membership change, again while etcd refuses it for a while after the last one, as the join loop would: it
   * wants the serving member connected to every voter for 5 s ("unhealthy cluster"), and a member added within
   * the second after one with the same peer URLs was removed gets that removed id ("member not found").
   */
  const attempt = async <T>(f: () => Promise<T>): Promise<T> => {
    const end = Date.now() + 20_000;
    for (;;) {
      try {
        return await f();
      } catch (e) {
        if (!/unhealthy cluster|member not found/.test((e as Error).message) || Date.now() > end) throw e;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  };
  const up = (m: Member) => m.sup.waitFor("etcd", "up", AbortSignal.timeout(30_000));
  const started = (m: Member) => eventMsgs(m.sup, "etcd").filter((x) => x.includes("started with PID")).at(-1) ?? "";

  beforeAll(async () => {
    dir = tempDir("etcd-join");
    mkdirSync(join(dir, "pki"));
    mkdirSync(join(dir, "wrong-pki"));
    pki = makeEtcdPki(join(dir, "pki"));
    wrongPki = makeEtcdPki(join(dir, "wrong-pki"));
    const n1 = await node("n1");
    endpoints = [`127.0.0.1:${n1.client}`];
    n1.sup.start("etcd");
    await n1.etcd.bootstrap(n1.sup, { machineType: "init" });
    await up(n1);
  });

  afterAll(async () => {
    await Promise.all(sups.map((s) => s.shutdown()));
    const stray = killByMarker(dir);
    rmSync(dir, { recursive: true, force: true });
    expect(stray).toEqual([]);
  });

  it("joins a second and a third control plane as learners, then promotes them", async () => {
    const n2 = await node("n2");
    n2.sup.start("etcd");
    await up(n2);
    const args = started(n2);
    expect(args).toContain("--initial-cluster-state=existing");
    const cluster = /--initial-cluster=(\S+)"/.exec(args)?.[1].split(",").sort();
    expect(cluster).toEqual([`n1=https://127.0.0.1:${nodes.get("n1")!.peer}`, `n2=https://127.0.0.1:${n2.peer}`]);
    expect(eventMsgs(n2.sup, "etcd")).toContain(`${WAITING_TO_JOIN} [127.0.0.1]`);
    expect(eventMsgs(n2.sup, "etcd").some((x) => /^Joining the etcd cluster as learner [0-9a-f]{16}$/.test(x))).toBe(true);
    // Healthy means promoted: a learner fails the quorum read.
    expect(await summary()).toEqual(["n1", "n2"]);
    endpoints.push(`127.0.0.1:${n2.client}`);

    const n3 = await node("n3");
    n3.sup.start("etcd");
    await up(n3);
    expect(await summary()).toEqual(["n1", "n2", "n3"]);
    endpoints.push(`127.0.0.1:${n3.client}`);
    expect(n3.sup.logs.get("etcd").tail().toString()).toContain("successfully promoted etcd member");
    const st = await n3.etcd.status();
    expect(st.isLearner).toBe(false);
    expect(st.leader).not.toBe(0n);
  });

  it("refuses a second bootstrap on a node that joined", async () => {
    const n2 = nodes.get("n2")!;
    const err = await n2.etcd.bootstrap(n2.sup, { machineType: "controlplane" }).catch((e: ApiError) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect([(err as ApiError).code, (err as ApiError).message]).toEqual([Code.AlreadyExists, "etcd data directory is not empty"]);
    expect(n2.sup.info("etcd")?.state).toBe("Running");
  });

  it("replaces its own stale member when it comes back with an empty data directory", async () => {
    const n3 = nodes.get("n3")!;
    const before = (await members()).find((m) => m.hostname === "n3")!;
    // Reset without leaving: the data is gone, the member is still in the cluster.
    await n3.sup.stop("etcd");
    rmSync(n3.etcd.dataDir, { recursive: true, force: true });
    n3.sup.start("etcd");
    await up(n3);
    const after = (await members()).find((m) => m.hostname === "n3")!;
    expect(after.id).not.toBe(before.id);
    expect(await summary()).toEqual(["n1", "n2", "n3"]);
    const said = `removing the stale etcd member "n3" ${before.id.toString(16).padStart(16, "0")}`;
    expect(n3.sup.logs.get("etcd").tail().toString()).toContain(said);
    // Also among the service's events, where `talosctl services etcd` shows it.
    expect(eventMsgs(n3.sup, "etcd").some((x) => x.startsWith(said))).toBe(true);
  });

  it("refuses a node with the wrong etcd CA, naming the TLS error and the endpoint, adds nothing, and joins after the fix", async () => {
    const n4 = await node("n4", {}, wrongPki);
    n4.sup.start("etcd");
    await waitUntil(() => eventMsgs(n4.sup, "etcd").some((x) => x.startsWith("etcd join attempt failed")), 10_000, "a failed join attempt");
    const failed = eventMsgs(n4.sup, "etcd").find((x) => x.startsWith("etcd join attempt failed"))!;
    expect(failed).toMatch(/^etcd join attempt failed: error getting etcd member list: no etcd endpoint answered: etcd is not reachable at https:\/\/127\.0\.0\.1:\d+: TLS: the member's certificate is not signed by this node's etcd CA \(unable to verify the first certificate\)/);
    for (const m of ["n1", "n2", "n3"]) expect(failed).toContain(`https://127.0.0.1:${nodes.get(m)!.client}`);
    expect(n4.sup.info("etcd")?.state).toBe("Waiting");
    expect(await summary()).toEqual(["n1", "n2", "n3"]);
    expect(readdirSync(n4.etcd.dataDir)).toEqual([]);

    // The node gets the cluster's etcd CA (a corrected config): the next attempt joins.
    n4.pki = pki;
    await up(n4);
    expect(await summary()).toEqual(["n1", "n2", "n3", "n4"]);
  });

  it("a failed attempt removes the learner it added; a nameless learner at this node's peer URL counts as stale", async () => {
    const peer = await freePort();
    const peerUrl = `https://127.0.0.1:${peer}`;
    // An attempt whose second member list fails (fault injected into a real client).
    let lists = 0;
    const env: JoinEnv = {
      name: "n5",
      peerUrls: [peerUrl],
      endpoints: () => endpoints,
      log: () => undefined,
      client: (list) => {
        const c = new EtcdClient(list, { ca: pki.ca, cert: pki.clientCert, key: pki.clientKey });
        const real = c.memberList.bind(c);
        c.memberList = async (o) => {
          if (++lists === 2) throw new ApiError(Code.Unavailable, "injected failure");
          return real(o);
        };
        return c;
      },
    };
    const err = await attempt(() => {
      lists = 0;
      return addMember(env, AbortSignal.timeout(defaultJoinSettings.attemptTimeoutMs));
    }).catch((e: Error) => e);
    expect((err as Error).message).toMatch(/^error getting second etcd member list \(the learner [0-9a-f]{16} added by this attempt was removed again\): injected failure$/);
    expect(await summary()).toEqual(["n1", "n2", "n3", "n4"]);

    // A learner added for this peer URL by an attempt whose etcd never started: removed by the next attempt.
    const c = admin();
    const orphan = (await attempt(() => c.memberAddAsLearner([peerUrl]))).member;
    c.close();
    expect(await summary()).toEqual(["?", "n1", "n2", "n3", "n4"].map((n) => (n === "?" ? "? (learner)" : n)));
    const lines: string[] = [];
    const plan = await attempt(() =>
      addMember({ ...env, client: (list) => new EtcdClient(list, { ca: pki.ca, cert: pki.clientCert, key: pki.clientKey }), log: (l) => lines.push(l) }, AbortSignal.timeout(10_000)),
    );
    expect(plan.learnerId).not.toBe(orphan.id);
    expect(lines[0]).toBe(`removing the stale etcd member unstarted member ${orphan.id.toString(16).padStart(16, "0")} (${peerUrl}) that has this node's name`);
    expect(plan.initialCluster).toContain(`n5=${peerUrl}`);
    // Not started here: take it out again.
    const c2 = admin();
    await c2.memberRemove(plan.learnerId);
    c2.close();
    expect(await summary()).toEqual(["n1", "n2", "n3", "n4"]);
  });

  it("leaves the cluster (member removed, data emptied, service stopped) and removes a member by id", async () => {
    const n4 = nodes.get("n4")!;
    await n4.etcd.leaveCluster(n4.sup);
    expect(await summary()).toEqual(["n1", "n2", "n3"]);
    expect(readdirSync(n4.etcd.dataDir)).toEqual([]);
    expect(n4.sup.info("etcd")?.state).toBe("Finished");
    endpoints = endpoints.filter((e) => e !== `127.0.0.1:${n4.client}`);

    // From n1, remove n3 by its id; n3's own etcd then stops serving as a member.
    const n1 = nodes.get("n1")!;
    const n3id = (await members()).find((m) => m.hostname === "n3")!.id;
    await n1.etcd.removeMemberById(n3id);
    expect(await summary()).toEqual(["n1", "n2"]);
    const again = await n1.etcd.removeMemberById(n3id).catch((e: ApiError) => e);
    expect([(again as ApiError).code, (again as ApiError).message]).toEqual([Code.NotFound, `failed to remove member ${n3id}: etcdserver: member not found`]);
  });

  it("the reset hook leaves only a node holding member data", async () => {
    const n2 = nodes.get("n2")!;
    const n4 = nodes.get("n4")!;
    // n4 left already: nothing to do, no error.
    await n4.etcd.leaveForReset(n4.sup);
    expect(existsSync(join(n2.etcd.dataDir, "member"))).toBe(true);
    await n2.etcd.leaveForReset(n2.sup);
    expect(await summary()).toEqual(["n1"]);
    expect(readdirSync(n2.etcd.dataDir)).toEqual([]);
  });
});
