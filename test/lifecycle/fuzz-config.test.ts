/**
 * Applies are all-or-nothing and never lock the node out (issue 13), through the real gRPC API over real TLS:
 *  - every case from the issue is one test: refused with InvalidArgument naming the YAML path, a bounded message,
 *    config.yaml byte-identical (absent in maintenance mode), in every apply mode and as a dry run, and the node
 *    still answers Version over the TLS mode its stored config calls for, also after a restart;
 *  - seeded random mutations (one character replaced, inserted or deleted, a line deleted or duplicated) of real
 *    configs (upstream's, and generated ones) are applied in maintenance and configured mode; after each, the stored
 *    bytes are the old or the new accepted config, and Version answers over the right TLS mode.
 * The seed is printed (FUZZ_SEED replays a run). A stuck reply shows as a Version/apply deadline error: the deadlines
 * here only detect hangs; latency figures are printed, not asserted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { status, type ServiceError } from "@grpc/grpc-js";
import {
  ApplyConfigurationRequest_Mode as Mode,
  ApplyConfigurationRequestSchema,
  ApplyConfigurationResponseSchema,
  MachineService,
  VersionResponseSchema,
} from "../../src/machinery/api/gen/machine/machine_pb.js";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { loadConfig } from "../../src/machinery/config/index.js";
import { MAX_ERROR_TEXT } from "../../src/machinery/config/limits.js";
import { issueClientCert } from "../../src/machinery/pki/issue.js";
import { tlsKeyPem } from "../../src/machinery/pki/pem.js";
import { runLocalNode, type RunningNode } from "../../src/pid1/local.js";
import { TestClient, insecureTls, mtls } from "../helpers/client.js";
import { clusterConfigs } from "../api/harness.js";
import { b64, makeCA, withMachineCA, editV1 } from "../machinery/config/ca-variants.js";
import { fixture } from "../machinery/config/fixtures.js";
import { mutate, rng } from "../machinery/config/fuzz.js";

const r = rng();
const DEADLINE_MS = 10_000; // a hang detector, far above any normal reply
const latencies: number[] = [];

interface Node {
  run: RunningNode;
  stateDir: string;
  address: string;
}

async function startAt(stateDir: string): Promise<Node> {
  const run = await runLocalNode({ stateDir, listen: { host: "127.0.0.1", port: 0 }, logLevel: "silent", services: false }, false);
  return { run, stateDir, address: `127.0.0.1:${run.port}` };
}

const freshNode = () => startAt(mkdtempSync(path.join(tmpdir(), "machined-fuzz-")));

async function stopNode(n: Node, wipe = true): Promise<void> {
  await n.run.stop();
  if (wipe) rmSync(n.stateDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
}

const read = (n: Node, name: string) => (existsSync(path.join(n.stateDir, name)) ? readFileSync(path.join(n.stateDir, name)) : undefined);

interface Creds {
  ca: string;
  crt: string;
  key: string;
}

/** An os:admin client certificate from the config's own OS CA, or undefined when the config has no CA key. */
async function credsFor(text: string): Promise<Creds | undefined> {
  const ca = loadConfig(text).machine?.ca;
  if (!ca?.crt || !ca.key) return undefined;
  const pem = { crt: Buffer.from(ca.crt, "base64").toString(), key: Buffer.from(ca.key, "base64").toString() };
  const c = await issueClientCert(pem, { roles: ["os:admin"] });
  return { ca: pem.crt, crt: c.crt, key: tlsKeyPem(c.key) };
}

const clientFor = (n: Node, creds: Creds | undefined) => new TestClient(n.address, creds ? mtls(creds.ca, creds.crt, creds.key) : insecureTls());

/**
 * Version over the TLS mode the active config calls for: maintenance (no config: --insecure, no RBAC), mTLS with a
 * certificate from the config's CA (RBAC on), or "waiting" (a worker without the CA key: --insecure, configured).
 */
async function expectServing(n: Node, active: string | undefined, why: string): Promise<void> {
  const creds = active === undefined ? undefined : await credsFor(active);
  const c = clientFor(n, creds);
  const t0 = performance.now();
  try {
    const v = await c.unary(MachineService, "Version", EmptySchema, VersionResponseSchema, {}, { deadlineMs: DEADLINE_MS }).catch((e: Error) => {
      throw new Error(`${why}: Version failed (seed ${r.seed}): ${e.message}`);
    });
    latencies.push(performance.now() - t0);
    expect(n.run.node.mode, why).toBe(active === undefined ? "maintenance" : "configured");
    if (active === undefined) expect(v.messages[0].features, why).toBeUndefined();
    else if (creds) expect(v.messages[0].features?.rbac, why).toBe(true);
  } finally {
    c.close();
  }
}

async function tryApply(n: Node, creds: Creds | undefined, data: string | Uint8Array, mode: Mode, dryRun = false): Promise<ServiceError | undefined> {
  const c = clientFor(n, creds);
  try {
    await c.unary(
      MachineService,
      "ApplyConfiguration",
      ApplyConfigurationRequestSchema,
      ApplyConfigurationResponseSchema,
      { data: typeof data === "string" ? new TextEncoder().encode(data) : data, mode, dryRun, tryModeTimeout: { seconds: 600n } },
      { deadlineMs: DEADLINE_MS },
    );
    return undefined;
  } catch (e) {
    return e as ServiceError;
  } finally {
    c.close();
  }
}

const MODES: [string, Mode, boolean][] = [
  ["AUTO", Mode.AUTO, false],
  ["NO_REBOOT", Mode.NO_REBOOT, false],
  ["REBOOT", Mode.REBOOT, false],
  ["STAGED", Mode.STAGED, false],
  ["TRY", Mode.TRY, false],
  ["dry-run", Mode.AUTO, true],
];

afterAll(() => {
  const sorted = [...latencies].sort((a, b) => a - b);
  const q = (p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))].toFixed(0) : "-");
  console.log(`fuzz-config seed ${r.seed}: ${latencies.length} Version probes, latency p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms`);
});

describe("issue 13: refused applies store nothing and never lock the node out", () => {
  let maint: Node;
  let conf: Node;
  let cp: string;
  let admin: Creds;
  beforeAll(async () => {
    cp = (await clusterConfigs()).controlplane;
    admin = (await credsFor(cp))!;
    [maint, conf] = await Promise.all([freshNode(), freshNode()]);
    expect(await tryApply(conf, undefined, cp, Mode.AUTO)).toBeUndefined();
  }, 60_000);
  afterAll(async () => {
    await Promise.all([maint && stopNode(maint), conf && stopNode(conf)]);
  });

  const ca = () => loadConfig(cp).machine!.ca!;
  const unknownKeys = (n: number) => cp.replace("machine:\n", `machine:\n${Array.from({ length: n }, (_, i) => `    unknownKey${i}: 1\n`).join("")}`);
  const aliasBomb = () => {
    // ~1 MiB of text whose aliases would expand to hundreds of MiB.
    const lines = [`version: v1alpha1`, `machine:`, `  type: controlplane`, `  nodeLabels: {}`, `x0: &x0 "${"z".repeat(1 << 20)}"`];
    for (let i = 1; i < 4; i++) lines.push(`x${i}: &x${i} [${Array(16).fill(`*x${i - 1}`).join(", ")}]`);
    return `${lines.join("\n")}\n`;
  };

  const cases: [string, () => string | Uint8Array | Promise<string>, RegExp][] = [
    ["a garbage machine.ca.crt", () => cp.replace(ca().crt!, b64("garbage")), /^machine\.ca\.crt: not a PEM certificate/],
    ["a non-PEM machine.ca.key", () => cp.replace(ca().key!, b64("definitely not a key")), /^machine\.ca\.key: not a PEM private key/],
    ["certSAN 999.999.999.999", () => editV1(cp, (v) => void (v.machine.certSANs = ["999.999.999.999"])), /^machine\.certSANs\[0\]: "999\.999\.999\.999" is not a valid IP address/],
    ["certSAN ::::", () => editV1(cp, (v) => void (v.machine.certSANs = ["::::"])), /^machine\.certSANs\[0\]: "::::" is not a valid IP address/],
    ["a machine.ca.key that does not match its certificate", async () => withMachineCA(cp, { crt: Buffer.from(ca().crt!, "base64").toString(), key: (await makeCA()).key }), /^machine\.ca\.key: the key does not belong to machine\.ca\.crt/],
    // Flow style keeps 20,000 names under the token budget, so the certSANs bound is the one that answers.
    ["20,000 certSANs", () => cp.replace("certSANs: []", `certSANs: [${Array.from({ length: 20_000 }, (_, i) => `s${i}.example`).join(",")}]`), /^machine\.certSANs: 20000 entries; at most 512/],
    ["a bad certificate elsewhere (cluster.ca)", () => cp.replace(loadConfig(cp).cluster!.ca!.crt!, b64("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")), /^cluster\.ca\.crt: failed to parse the certificate/],
    ["10,000 unknown keys", () => unknownKeys(10_000), /^machine\.unknownKey0: unknown keys found during decoding\n[\s\S]*\.\.\. and 9988 more problems$/],
    ["20,000 unknown keys", () => unknownKeys(20_000), /^the config has more than 100000 YAML tokens/],
    ["100,000 unknown keys", () => unknownKeys(100_000), /^the config has more than 100000 YAML tokens/],
    ["5,000 unknown keys (message bounded)", () => unknownKeys(5_000), /\.\.\. and 4988 more problems$/],
    ["a UTF-16 config", () => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(cp, "utf16le")]), /^config is encoded as UTF-16/],
    ["a UTF-16 config without a byte order mark", () => Buffer.from(cp, "utf16le"), /^config contains a NUL byte at offset 1/],
    ["a 64 KiB path", () => cp.replace("machine:\n", `machine:\n    ? ${"p".repeat(64 * 1024)}\n    : 1\n`), /^machine: a map key of 64 KiB is longer than the 1 KiB allowed/],
    ["a 20 MiB machine.files entry", () => cp.replace("machine:\n", `machine:\n    files:\n      - content: ${"f".repeat(20 << 20)}\n        path: /var/f\n        op: create\n`), /^config is 20 MiB, more than the 4 MiB/],
    ["YAML aliases expanding 1 MiB to hundreds of MiB", aliasBomb, /the document holds more than 8 MiB of text \(after expanding aliases\)/],
    ["20,000 nested brackets", () => cp.replace("machine:\n", `machine:\n    nodeLabels: ${"[".repeat(20_000)}${"]".repeat(20_000)}\n`), /^YAML is nested more than 64 levels deep/],
  ];

  for (const [name, build, match] of cases) {
    it(name, async () => {
      const data = await build();
      // Maintenance mode: nothing stored, still in maintenance.
      const e = await tryApply(maint, undefined, data, Mode.AUTO);
      expect(e?.code, `${name}: ${e?.details}`).toBe(status.INVALID_ARGUMENT);
      expect(e!.details.length).toBeLessThanOrEqual(MAX_ERROR_TEXT);
      expect(e!.details).toMatch(match);
      expect(read(maint, "config.yaml")).toBeUndefined();
      await expectServing(maint, undefined, name);

      // Configured mode, every apply mode and a dry run: the stored bytes do not change.
      const before = read(conf, "config.yaml");
      for (const [modeName, mode, dryRun] of MODES) {
        const err = await tryApply(conf, admin, data, mode, dryRun);
        expect(err, `${name} ${modeName}`).toBeDefined();
        expect([status.INVALID_ARGUMENT, ...(mode === Mode.REBOOT ? [status.UNIMPLEMENTED] : [])], `${name} ${modeName}: ${err?.details}`).toContain(err!.code);
        expect(err!.details.length).toBeLessThanOrEqual(MAX_ERROR_TEXT);
        if (err!.code === status.INVALID_ARGUMENT) expect(err!.details).toMatch(match);
        expect(read(conf, "config.yaml")?.equals(before!), `${name} ${modeName}: config.yaml unchanged`).toBe(true);
        expect(read(conf, "config.staged.yaml"), `${name} ${modeName}: nothing staged`).toBeUndefined();
      }
      await expectServing(conf, cp, name);
    }, 120_000);
  }

  it("after all of that, a restart serves the stored config again", async () => {
    await stopNode(conf, false);
    conf = await startAt(conf.stateDir);
    await expectServing(conf, cp, "restart");
    expect(read(conf, "config.yaml")?.toString()).toBe(cp);
  }, 60_000);
});

describe("seeded random mutations of real configs through the API", () => {
  const ALLOWED_MAINTENANCE = [status.INVALID_ARGUMENT, status.FAILED_PRECONDITION]; // the latter: a local install disk that does not exist
  let bases: string[];
  beforeAll(async () => {
    const gen = await clusterConfigs();
    bases = [gen.controlplane, gen.worker, fixture("configs", "controlplane.yaml"), fixture("configs", "worker.yaml")];
    console.log(`fuzz-config seed ${r.seed} (FUZZ_SEED=${r.seed} replays it)`);
  });

  it("maintenance mode: refused leaves nothing stored; accepted is stored as sent and served", async () => {
    const rounds = Number(process.env.FUZZ_ROUNDS ?? 60);
    let n = await freshNode();
    let accepted = 0;
    try {
      for (let i = 0; i < rounds; i++) {
        const base = r.pick(bases);
        const m = mutate(base, r);
        const why = `maintenance #${i} ${m.what} (seed ${r.seed})`;
        const err = await tryApply(n, undefined, m.text, Mode.AUTO);
        if (err) {
          expect(ALLOWED_MAINTENANCE, `${why}: ${err.code} ${err.details}`).toContain(err.code);
          expect(err.details.length, why).toBeLessThanOrEqual(MAX_ERROR_TEXT);
          expect(read(n, "config.yaml"), why).toBeUndefined();
          await expectServing(n, undefined, why);
          continue;
        }
        accepted++;
        expect(read(n, "config.yaml")?.toString(), why).toBe(m.text);
        await expectServing(n, m.text, why);
        // Back to maintenance for the next round: a node with an empty state folder.
        await stopNode(n);
        n = await freshNode();
      }
    } finally {
      await stopNode(n);
    }
    console.log(`maintenance: ${accepted} of ${rounds} mutations accepted`);
  }, 300_000);

  it("configured mode, all apply modes: stored bytes are the old or the new accepted config", async () => {
    const rounds = Number(process.env.FUZZ_ROUNDS ?? 140);
    const gen = await clusterConfigs();
    const n = await freshNode();
    let stored = gen.controlplane;
    let active = stored;
    let creds = await credsFor(active);
    const counts = { accepted: 0, refused: 0 };
    try {
      expect(await tryApply(n, undefined, stored, Mode.AUTO)).toBeUndefined();
      for (let i = 0; i < rounds; i++) {
        const base = r.chance(0.8) ? active : r.pick(bases.filter((b) => loadConfig(b).machine?.ca?.key));
        const m = mutate(base, r);
        const [modeName, mode, dryRun] = r.pick(MODES);
        const why = `configured #${i} ${modeName} ${m.what} (seed ${r.seed})`;
        const staged = read(n, "config.staged.yaml");
        const err = await tryApply(n, creds, m.text, mode, dryRun);
        if (err) {
          counts.refused++;
          expect([status.INVALID_ARGUMENT, status.UNIMPLEMENTED], `${why}: ${err.code} ${err.details}`).toContain(err.code);
          expect(err.details.length, why).toBeLessThanOrEqual(MAX_ERROR_TEXT);
          expect(read(n, "config.yaml")?.toString(), `${why}: config.yaml unchanged`).toBe(stored);
          expect(read(n, "config.staged.yaml")?.toString(), `${why}: staged unchanged`).toBe(staged?.toString());
        } else {
          counts.accepted++;
          if (!dryRun && mode === Mode.STAGED) expect(read(n, "config.staged.yaml")?.toString(), why).toBe(m.text);
          else if (!dryRun && mode !== Mode.TRY) stored = m.text;
          if (!dryRun && mode !== Mode.STAGED) active = m.text;
          expect(read(n, "config.yaml")?.toString(), `${why}: config.yaml`).toBe(stored);
          creds = await credsFor(active);
        }
        await expectServing(n, active, why);
      }
    } finally {
      await stopNode(n);
    }
    console.log(`configured: ${counts.accepted} accepted, ${counts.refused} refused`);
    expect(counts.accepted).toBeGreaterThan(0);
    expect(counts.refused).toBeGreaterThan(0);
  }, 300_000);
});
