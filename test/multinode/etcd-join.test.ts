/**
 * Three control planes join one etcd cluster by themselves, end to end: three sandboxed nodes (test/helpers/sandbox.ts,
 * each its own network/mount/UTS namespaces, etcd v3.7.3 from its image in the node's CRI containerd) on a lab bridge,
 * configured over the real API with generated configs whose cluster endpoint is the first node. Bootstrap once on the
 * first; the other two find it through the `controlplane` Endpoints (the cluster endpoint resolved, no API server
 * needed), join as learners and get promoted; `etcd members` lists three voters; a second Bootstrap is refused with
 * upstream's error. A graceful reset of the third leaves etcd first: two members remain and etcd keeps quorum (a
 * quorum read and a write through each remaining member, with a client certificate of the cluster's etcd CA); with
 * a config with another etcd CA it names the TLS failure and the endpoint while nothing is added to the cluster, and
 * with the right config applied it joins once more as a new member. Then the second leaves (`etcd leave`) and two
 * remain.
 *
 * Needs root, dist/ (npm run build) and the images in the loopback registry (make kube-images && make registry);
 * skips saying which is missing.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { status } from "@grpc/grpc-js";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { applyPatches, parsePatch } from "../../src/machinery/config/patch/index.js";
import { generateConfigs } from "../../src/machinery/generate/index.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { MachineService, ApplyConfigurationRequest_Mode as Mode } from "../../src/machinery/api/gen/machine/machine_pb.js";
import { tlsKeyPem } from "../../src/machinery/pki/pem.js";
import { issueEtcdClientCert } from "../../src/machinery/pki/issue.js";
import { newECDSACA } from "../../src/machinery/pki/ca.js";
import { EtcdClient } from "../../src/supervisor/etcd/client.js";
import { TestClient, insecureTls, mtls } from "../helpers/client.js";
import { mirrorsPatch, sandboxSkipReason, startLab, startSandbox, type Lab, type SandboxNode, until as untilEvery } from "../helpers/sandbox.js";

const skip = await sandboxSkipReason({ images: ["etcd", "siderolabs/kubelet", "pause"] });
if (skip) console.log(`skipping the etcd join end-to-end test: ${skip}`);

const MIN = 60_000;

/** The shared poll, once a second: joins and member changes are quick here. */
const until = <T>(what: string, ms: number, fn: () => Promise<T>) => untilEvery(what, ms, fn, 1000);

describe.skipIf(!!skip)("etcd join across three sandboxed control planes", () => {
  let lab: Lab;
  const nodes: SandboxNode[] = [];
  const clients: TestClient[] = [];
  let admin: (n: SandboxNode) => TestClient;
  let applyConfig: (n: SandboxNode, opts?: { patches?: string[]; configured?: boolean }) => Promise<void>;
  let etcdTls: { ca: string; cert: string; key: string };
  /** cp3's member id before its reset. */
  let cp3Before: bigint | undefined;

  const memberList = async (n: SandboxNode) => {
    const r = await admin(n).unary(MachineService, "EtcdMemberList", m.EtcdMemberListRequestSchema, m.EtcdMemberListResponseSchema, { queryLocal: true }, { deadlineMs: 20_000 });
    return r.messages[0].members;
  };
  const members = async (n: SandboxNode) => (await memberList(n)).map((x) => `${x.hostname}${x.isLearner ? " (learner)" : ""}`).sort();
  /** etcd keeps quorum: through each of `through` alone, a quorum read and a write read back (from outside the nodes). */
  const quorumThrough = async (through: SandboxNode[], key: string) => {
    for (const n of through) {
      const c = new EtcdClient([`${n.ip}:2379`], etcdTls);
      try {
        await c.validateQuorum(AbortSignal.timeout(15_000));
        await c.put(`/e2e/${key}`, n.name, AbortSignal.timeout(15_000));
        expect(await c.get(`/e2e/${key}`, AbortSignal.timeout(15_000))).toBe(n.name);
      } finally {
        c.close();
      }
    }
  };
  const dataDirEntries = (n: SandboxNode) => {
    const dir = join(n.stateDir, "var/lib/etcd");
    return existsSync(dir) ? readdirSync(dir) : [];
  };
  const etcdEvents = async (n: SandboxNode) => {
    const r = await admin(n).unary(MachineService, "ServiceList", EmptySchema, m.ServiceListResponseSchema, {}, { deadlineMs: 20_000 });
    const etcd = r.messages[0].services.find((s) => s.id === "etcd");
    return { state: etcd?.state, events: etcd?.events?.events.map((e) => e.msg) ?? [] };
  };
  const diagnostics = async () => {
    const out: string[] = [];
    for (const n of nodes) {
      const ev = await etcdEvents(n).catch((e: Error) => ({ state: "?", events: [e.message] }));
      out.push(`--- ${n.name} etcd ${ev.state}: ${ev.events.slice(-6).join(" | ")}`, n.log().split("\n").slice(-15).join("\n"));
    }
    return out.join("\n");
  };

  const t0 = Date.now();
  const progress = (msg: string) => console.log(`[etcd-join e2e +${Math.round((Date.now() - t0) / 1000)}s] ${msg}`);

  beforeAll(async () => {
    lab = await startLab("etcdjoin", "10.214.61");
    const endpoint = `https://${lab.address(2).split("/")[0]}:6443`;
    const cfgs = await generateConfigs({ clusterName: "etcd-join", endpoint, installDisk: "/dev/vda", talosVersion: "v1.13" });
    const ctx = (parse(cfgs.talosconfig) as { contexts: Record<string, { ca: string; crt: string; key: string }> }).contexts["etcd-join"];
    const d = (s: string) => Buffer.from(s, "base64").toString("utf8");
    const creds = () => mtls(d(ctx.ca), d(ctx.crt), tlsKeyPem(d(ctx.key)));
    const byNode = new Map<SandboxNode, TestClient>();
    admin = (n) => {
      let c = byNode.get(n);
      if (!c) {
        c = new TestClient(`${n.ip}:50000`, creds());
        byNode.set(n, c);
        clients.push(c);
      }
      return c;
    };
    nodes.push(...(await Promise.all([2, 3, 4].map((n, i) => startSandbox(lab, `cp${i + 1}`, n)))));
    progress("three sandboxes up");
    applyConfig = async (n, opts = {}) => {
      const patches = [mirrorsPatch(lab.gateway), `machine:\n  network:\n    hostname: ${n.name}\n`, ...(opts.patches ?? [])];
      const cfg = applyPatches(cfgs.controlplane, patches.map((p) => parsePatch(p)));
      // A node in maintenance takes its config without credentials; a configured one only with the cluster's.
      const c = opts.configured ? admin(n) : new TestClient(`${n.ip}:50000`, insecureTls());
      try {
        await c.unary(
          MachineService,
          "ApplyConfiguration",
          m.ApplyConfigurationRequestSchema,
          m.ApplyConfigurationResponseSchema,
          { data: new TextEncoder().encode(cfg), mode: Mode.AUTO },
          { deadlineMs: MIN },
        );
      } finally {
        if (!opts.configured) c.close();
      }
      // Up with its config once its own API answers with the cluster's credentials.
      await until(`${n.name}'s API with the cluster's credentials`, 2 * MIN, () => admin(n).unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {}, { deadlineMs: 10_000 }));
    };
    const client = await issueEtcdClientCert(cfgs.secrets.certs.etcd, "etcd-join-e2e");
    etcdTls = { ca: cfgs.secrets.certs.etcd.crt, cert: client.crt, key: tlsKeyPem(client.key) };
    await Promise.all(nodes.map((n) => applyConfig(n)));
    progress("configs applied, the cluster's credentials accepted");
  }, 5 * MIN);

  afterAll(async () => {
    for (const c of clients) c.close();
    await Promise.all(nodes.map((n) => n.stop()));
    await lab?.stop();
  }, 5 * MIN);

  it("joins the second and third control plane by themselves after one bootstrap", async () => {
    const [cp1, cp2, cp3] = nodes;
    // Before the bootstrap the others wait, saying so, and keep trying the endpoint.
    await until("cp2 waiting to join", 2 * MIN, async () => {
      const ev = await etcdEvents(cp2);
      expect(ev.events.some((x) => x.startsWith("etcd is waiting to join the cluster"))).toBe(true);
    });
    progress("cp2 waits to join");
    await until("cp1 ready for bootstrap", 2 * MIN, () => admin(cp1).unary(MachineService, "Bootstrap", m.BootstrapRequestSchema, m.BootstrapResponseSchema, {}, { deadlineMs: 20_000 }));
    progress("cp1 bootstrapped");
    try {
      await until("three voting members", 4 * MIN, async () => expect(await members(cp1)).toEqual(["cp1", "cp2", "cp3"]));
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${await diagnostics()}`);
    }
    progress("three voting members");
    // Every node sees the same three voters, and each joined node says how it joined.
    for (const n of [cp2, cp3]) {
      expect(await members(n)).toEqual(["cp1", "cp2", "cp3"]);
      expect((await etcdEvents(n)).events.some((x) => /^Joining the etcd cluster as learner [0-9a-f]{16}$/.test(x))).toBe(true);
    }
    const st = await admin(cp3).unary(MachineService, "EtcdStatus", EmptySchema, m.EtcdStatusResponseSchema, {});
    expect(st.messages[0].memberStatus?.isLearner).toBe(false);
    expect(st.messages[0].memberStatus?.protocolVersion).toMatch(/^3\.7\./);
  }, 8 * MIN);

  it("refuses a second bootstrap on a node that joined", async () => {
    const err = await admin(nodes[1])
      .unary(MachineService, "Bootstrap", m.BootstrapRequestSchema, m.BootstrapResponseSchema, {})
      .then(
        () => null,
        (e: { code: number; details: string }) => ({ code: e.code, details: e.details }),
      );
    expect(err).toEqual({ code: status.ALREADY_EXISTS, details: "etcd data directory is not empty" });
  });

  it("a graceful reset of a control plane leaves etcd first; two members remain and keep quorum", async () => {
    const [cp1, cp2, cp3] = nodes;
    const before = (await memberList(cp1)).find((x) => x.hostname === "cp3")?.id;
    expect(before).toBeDefined();
    await admin(cp3).unary(MachineService, "Reset", m.ResetRequestSchema, m.ResetResponseSchema, { graceful: true, reboot: true }, { deadlineMs: MIN });
    progress("cp3 reset requested");
    try {
      await until("cp3 gone from the members", 2 * MIN, async () => expect(await members(cp1)).toEqual(["cp1", "cp2"]));
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${await diagnostics()}`);
    }
    progress("two members after the reset");
    expect(await members(cp2)).toEqual(["cp1", "cp2"]);
    await quorumThrough([cp1, cp2], "after-reset");
    // The reset node is back in maintenance (its config wiped) with nothing of its etcd member left.
    await until("cp3 in maintenance", 2 * MIN, async () => {
      const c = new TestClient(`${cp3.ip}:50000`, insecureTls());
      try {
        await c.unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {}, { deadlineMs: 10_000 });
      } finally {
        c.close();
      }
    });
    expect(dataDirEntries(cp3)).toEqual([]);
    cp3Before = before;
  }, 5 * MIN);

  it("the reset control plane, configured with another etcd CA, says so and adds nothing; with the right one it joins as a new member", async () => {
    const [cp1, , cp3] = nodes;
    const other = await newECDSACA("etcd");
    const b64 = (x: string) => Buffer.from(x).toString("base64");
    await applyConfig(cp3, { patches: [`cluster:\n  etcd:\n    ca:\n      crt: ${b64(other.crt)}\n      key: ${b64(other.key)}\n`] });
    progress("cp3 configured with another etcd CA");
    const tlsError = /^etcd join attempt failed: error getting etcd member list: .*etcd is not reachable at https:\/\/10\.214\.61\.[234]:2379: TLS: .*etcd CA/;
    try {
      const said = await until("cp3 naming the etcd CA it cannot join with", 2 * MIN, async () => {
        const hit = (await etcdEvents(cp3)).events.find((x) => tlsError.test(x));
        expect(hit).toBeDefined();
        return hit;
      });
      progress(`cp3 says: ${said}`);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${await diagnostics()}`);
    }
    // Nothing half-joined: no learner was added for it.
    expect(await members(cp1)).toEqual(["cp1", "cp2"]);
    progress("cp3 refused by TLS, nothing added");
    await applyConfig(cp3, { configured: true });
    try {
      await until("cp3 a voting member again", 4 * MIN, async () => expect(await members(cp1)).toEqual(["cp1", "cp2", "cp3"]));
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${await diagnostics()}`);
    }
    progress("cp3 joined again with the cluster's etcd CA");
    const again = (await memberList(cp1)).find((x) => x.hostname === "cp3")?.id;
    expect(again).toBeDefined();
    expect(again).not.toBe(cp3Before);
    await quorumThrough([cp3], "after-rejoin");
  }, 7 * MIN);

  it("a control plane that leaves is removed; two members remain; an unknown member id is NotFound", async () => {
    const [cp1, cp2, cp3] = nodes;
    await admin(cp2).unary(MachineService, "EtcdLeaveCluster", m.EtcdLeaveClusterRequestSchema, m.EtcdLeaveClusterResponseSchema, {}, { deadlineMs: 2 * MIN });
    expect(await members(cp1)).toEqual(["cp1", "cp3"]);
    expect(await members(cp3)).toEqual(["cp1", "cp3"]);
    expect((await etcdEvents(cp2)).state).toBe("Finished");
    expect(dataDirEntries(cp2)).toEqual([]);
    await quorumThrough([cp1, cp3], "after-leave");
    const err = await admin(cp1)
      .unary(MachineService, "EtcdRemoveMemberByID", m.EtcdRemoveMemberByIDRequestSchema, m.EtcdRemoveMemberByIDResponseSchema, { memberId: 0x1234n })
      .then(
        () => null,
        (e: { code: number; details: string }) => ({ code: e.code, details: e.details }),
      );
    expect(err).toEqual({ code: status.NOT_FOUND, details: "failed to remove member 4660: etcdserver: member not found" });
  }, 3 * MIN);
});
