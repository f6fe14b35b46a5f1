/**
 * apid request forwarding between real local-mode nodes: two control planes of one cluster on 127.0.11.2:50000
 * and 127.0.11.3:50000 (loopback addresses, real mTLS, real gRPC; containerd/etcd off, nothing here needs them),
 * driven the way talosctl drives them: one endpoint, the targets in `nodes` (or one `node` for COSI).
 * Two stand-ins for nodes that cannot answer: 127.0.11.8:50000 where nothing listens (refused at once) and
 * 127.0.11.9:50000 that accepts TCP and never speaks TLS (a node that hangs: only the per-node dial deadline
 * ends it).
 */
import "reflect-metadata";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import * as net from "node:net";
import * as grpc from "@grpc/grpc-js";
import { status } from "@grpc/grpc-js";
import { fromBinary, toBinary, create } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { runLocalNode, type RunningNode } from "../../src/pid1/local.js";
import { MachineService } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as cosi from "../../src/machinery/api/gen/cosi/state_pb.js";
import { DataSchema } from "../../src/machinery/api/gen/common/common_pb.js";
import { applyPatches, parsePatch } from "../../src/machinery/config/patch/index.js";
import { issueClientCert } from "../../src/machinery/pki/issue.js";
import { tlsKeyPem } from "../../src/machinery/pki/pem.js";
import { Role } from "../../src/machinery/role.js";
import { TestClient, insecureTls, mtls } from "../helpers/client.js";
import { apply, clusterConfigs, eventually, roleCreds, talosconfigCreds, type Creds } from "../api/harness.js";

const A = "127.0.11.2";
const B = "127.0.11.3";
const REFUSING = "127.0.11.8";
const HANGING = "127.0.11.9";

interface Node {
  ip: string;
  dir: string;
  node: RunningNode;
}

let nodes: Node[] = [];
let hanging: net.Server;
const hung = new Set<net.Socket>();
let admin: Creds;
let clients: TestClient[] = [];

const client = (ip: string, c: Creds) => {
  const t = new TestClient(`${ip}:50000`, mtls(c.ca, c.crt, c.key));
  clients.push(t);
  return t;
};

async function startNode(ip: string, hostname: string, controlplane: string): Promise<Node> {
  const dir = mkdtempSync(path.join(tmpdir(), `machined-fwd-${hostname}-`));
  const node = await runLocalNode({ stateDir: dir, listen: { host: ip, port: 50000 }, logLevel: "info", services: false }, false);
  // The server certificate must name the address the other node dials (as an operator lists it in machine.certSANs).
  const cfg = applyPatches(controlplane, [parsePatch(`machine:\n  certSANs: [${ip}]\n  network:\n    hostname: ${hostname}\n`)]);
  const c = new TestClient(`${ip}:50000`, insecureTls());
  await apply(c, cfg);
  c.close();
  return { ip, dir, node };
}

beforeAll(async () => {
  const cfgs = await clusterConfigs();
  admin = talosconfigCreds(cfgs.talosconfig);
  nodes = await Promise.all([startNode(A, "node-a", cfgs.controlplane), startNode(B, "node-b", cfgs.controlplane)]);
  for (const n of nodes) await eventually(() => version(client(n.ip, admin)), 30_000);
  hanging = net.createServer((s) => {
    hung.add(s);
    s.on("error", () => {});
    s.once("close", () => hung.delete(s));
  });
  await new Promise<void>((resolve) => hanging.listen(50000, HANGING, resolve));
}, 120_000);

afterAll(async () => {
  for (const c of clients) c.close();
  for (const s of hung) s.destroy();
  await new Promise((r) => hanging?.close(r));
  for (const n of nodes) {
    await n.node.stop();
    rmSync(n.dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  }
});

function version(c: TestClient, metadata?: Record<string, string | string[]>) {
  return c.unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {}, { metadata });
}

const nodeOf = (ip: string) => nodes.find((n) => n.ip === ip)!.node;

describe("one-to-many unary (talosctl -e A -n A,B version)", () => {
  it("answers with one entry per target, metadata.hostname = the target as requested, A itself without a dial", async () => {
    const before = nodeOf(B).api.conns.size;
    const v = await version(client(A, admin), { nodes: [A, B] });
    expect(v.messages.map((x) => x.metadata?.hostname)).toEqual([A, B]);
    for (const x of v.messages) {
      expect(x.metadata?.error ?? "").toBe("");
      expect(x.version?.tag).toBe(v.messages[0].version?.tag);
    }
    // A forwarded only to B: one backend, none for itself; B saw a connection from A's impersonator certificate.
    const pool = nodeOf(A).api.forwarder.pool;
    expect([pool.size, pool.has(A), pool.has(B)]).toEqual([1, false, true]);
    expect(nodeOf(B).api.conns.size).toBeGreaterThanOrEqual(before);
  });

  it("a target that refuses the connection gets its error in metadata; the call and the others succeed", async () => {
    const v = await version(client(A, admin), { nodes: [A, REFUSING, B] });
    expect(v.messages.map((x) => x.metadata?.hostname)).toEqual([A, REFUSING, B]);
    expect(v.messages[0].version?.tag).toBeTruthy();
    expect(v.messages[2].version?.tag).toBeTruthy();
    expect(v.messages[1].version).toBeUndefined();
    expect(v.messages[1].metadata?.error).toBe(
      `rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp ${REFUSING}:50000: connect: connection refused"`,
    );
    expect(v.messages[1].metadata?.status?.code).toBe(status.UNAVAILABLE);
  });

  it("a target that hangs times out alone (its own dial deadline), the others answer", async () => {
    const v = await version(client(A, admin), { nodes: [B, HANGING] });
    expect(v.messages.map((x) => x.metadata?.hostname)).toEqual([B, HANGING]);
    expect(v.messages[0].version?.tag).toBeTruthy();
    expect(v.messages[1].metadata?.error).toContain(`dial tcp ${HANGING}:50000: i/o timeout`);
  }, 60_000);
});

describe("one-to-one and COSI", () => {
  it("a single `node` is proxied unchanged (no metadata added), and COSI Get reads that node's resources", async () => {
    const v = await version(client(A, admin), { node: B });
    expect(v.messages).toHaveLength(1);
    expect(v.messages[0].metadata).toBeUndefined();
    const r = await client(A, admin).unary(cosi.State, "Get", cosi.GetRequestSchema, cosi.GetResponseSchema, { namespace: "config", type: "MachineConfigs.config.talos.dev", id: "v1alpha1" }, { metadata: { node: B } });
    expect(r.resource?.spec?.yamlSpec).toContain("hostname: node-b");
  });

  it("several nodes on a COSI call is upstream's InvalidArgument", async () => {
    const call = client(A, admin).unary(cosi.State, "Get", cosi.GetRequestSchema, cosi.GetResponseSchema, { namespace: "config", type: "MachineConfigs.config.talos.dev", id: "v1alpha1" }, { metadata: { nodes: [A, B] } });
    await expect(call).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: "one-2-many proxying is not supported for method /cosi.resource.State/Get" });
  });

  it("a target's own error is the call's error for one-to-one", async () => {
    await expect(version(client(A, admin), { node: REFUSING })).rejects.toMatchObject({ code: status.UNAVAILABLE, details: expect.stringContaining("connection refused") });
  });
});

describe("one-to-many streaming (talosctl -n A,B logs -f machined)", () => {
  it("merges both nodes' frames, each with its metadata.hostname, while following", async () => {
    const c = client(A, admin);
    const md = new grpc.Metadata();
    md.add("nodes", A);
    md.add("nodes", B);
    const seen = new Map<string, number>();
    const call = c.raw.makeServerStreamRequest(
      "/machine.MachineService/Logs",
      (x: m.LogsRequest) => Buffer.from(toBinary(m.LogsRequestSchema, x)),
      (b: Buffer) => fromBinary(DataSchema, b),
      create(m.LogsRequestSchema, { namespace: "system", id: "machined", follow: true, tailLines: 5 }),
      md,
      {},
    );
    await new Promise<void>((resolve, reject) => {
      call.on("data", (d: { metadata?: { hostname: string; error: string }; bytes: Uint8Array }) => {
        const host = d.metadata?.hostname ?? "?";
        if (d.metadata?.error) return reject(new Error(`${host}: ${d.metadata.error}`));
        expect(d.bytes.length).toBeGreaterThan(0);
        seen.set(host, (seen.get(host) ?? 0) + 1);
        if (seen.has(A) && seen.has(B)) resolve();
      });
      call.on("error", reject);
      call.on("end", () => reject(new Error(`stream ended early; frames by node: ${JSON.stringify([...seen])}`)));
    });
    call.cancel();
    expect([...seen.keys()].sort()).toEqual([A, B]);
  });

  it("a node that cannot stream gives one error frame and the other node's frames still come", async () => {
    const frames = await client(A, admin).stream(MachineService, "Logs", m.LogsRequestSchema, DataSchema, { namespace: "system", id: "machined", tailLines: 3 }, { metadata: { nodes: [REFUSING, B] } });
    const errors = frames.filter((f) => f.metadata?.error);
    expect(errors.map((f) => f.metadata?.hostname)).toEqual([REFUSING]);
    expect(frames.filter((f) => !f.metadata?.error).every((f) => f.metadata?.hostname === B)).toBe(true);
    expect(frames.length).toBeGreaterThan(1);
  });
});

describe("roles travel only as upstream allows", () => {
  const readNothing = (c: TestClient, metadata?: Record<string, string | string[]>) =>
    c.stream(MachineService, "Read", m.ReadRequestSchema, DataSchema, { path: "/nonexistent/forwarding-test" }, { metadata });

  it("a reader's `talos-role: os:admin` on its own (non-impersonator) certificate gives nothing", async () => {
    const reader = await roleCreds(await clusterConfigs(), [Role.Reader]);
    await expect(readNothing(client(A, reader), { "talos-role": Role.Admin })).rejects.toMatchObject({ code: status.PERMISSION_DENIED, details: "not authorized" });
  });

  it("an impersonator certificate's `talos-role` replaces its roles; without it the certificate allows nothing", async () => {
    const cfgs = await clusterConfigs();
    const osCA = { crt: cfgs.secrets.certs.os.crt, key: cfgs.secrets.certs.os.key };
    const c = await issueClientCert(osCA, { roles: [Role.Impersonator] });
    const imp: Creds = { ca: admin.ca, crt: c.crt, key: tlsKeyPem(c.key) };
    await expect(version(client(B, imp))).rejects.toMatchObject({ code: status.PERMISSION_DENIED });
    expect((await version(client(B, imp), { "talos-role": Role.Reader })).messages).toHaveLength(1);
    await expect(readNothing(client(B, imp), { "talos-role": Role.Reader })).rejects.toMatchObject({ code: status.PERMISSION_DENIED });
    // An admin-only call gets past authorization and fails on the path instead.
    await expect(readNothing(client(B, imp), { "talos-role": Role.Admin })).rejects.not.toMatchObject({ code: status.PERMISSION_DENIED });
  });

  it("forwarding carries the caller's roles: a reader is refused by the target, an admin is not", async () => {
    const reader = await roleCreds(await clusterConfigs(), [Role.Reader]);
    await expect(readNothing(client(A, reader), { node: B })).rejects.toMatchObject({ code: status.PERMISSION_DENIED, details: "not authorized" });
    await expect(readNothing(client(A, admin), { node: B })).rejects.not.toMatchObject({ code: status.PERMISSION_DENIED });
    // One-to-many: each node refuses the reader in its own error frame, and the call ends normally.
    const frames = await readNothing(client(A, reader), { nodes: [A, B] });
    expect(frames.map((f) => [f.metadata?.hostname, f.metadata?.status?.code]).sort()).toEqual([
      [A, status.PERMISSION_DENIED],
      [B, status.PERMISSION_DENIED],
    ]);
  });
});
