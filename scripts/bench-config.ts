/**
 * `npx tsx scripts/bench-config.ts`: figures, not assertions, for config reading and applying (issue 13).
 *  1. In this process: loadConfig + validateConfig time and work for growing unknown-key counts and for the
 *     largest inputs the bounds allow, beside the floor (the generated config) measured in the same run.
 *  2. A real agent (BENCH_BUNDLE, default dist/machined.mjs; `npm run build` first) in its own process: peak RSS
 *     (VmHWM, reset before each case through /proc/PID/clear_refs) and settled RSS after each apply, for a 20 MiB
 *     machine.files entry (dry run and real), an alias bomb, and the largest config the bounds accept.
 * Point BENCH_BUNDLE at a build of an older commit to compare.
 */
import "reflect-metadata";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createServer } from "node:net";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { MachineService } from "../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../src/machinery/api/gen/machine/machine_pb.js";
import { generateConfigs } from "../src/machinery/generate/index.js";
import { loadConfig, validateConfig } from "../src/machinery/config/index.js";
import { yamlWork } from "../src/machinery/config/yaml.js";
import { TestClient, insecureTls, mtls } from "../test/helpers/client.js";
import { talosconfigCreds } from "../test/api/harness.js";

const BUNDLE = path.resolve(process.env.BENCH_BUNDLE ?? "dist/machined.mjs");
const Mode = m.ApplyConfigurationRequest_Mode;

function timeLoad(text: string, runs = 3): { ms: number; steps: number; result: string } {
  let best = Infinity;
  let result = "ok";
  for (let i = 0; i < runs; i++) {
    yamlWork.steps = 0;
    const t0 = performance.now();
    try {
      validateConfig(loadConfig(text), { mode: "local" });
      result = "ok";
    } catch (e) {
      result = (e as Error).message.split("\n")[0].slice(0, 70);
    }
    best = Math.min(best, performance.now() - t0);
  }
  return { ms: best, steps: yamlWork.steps, result };
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

async function startAgent(stateDir: string, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [BUNDLE, "start", "--state-dir", stateDir, "--listen", `127.0.0.1:${port}`, "--services", "off"], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, NODE_NO_WARNINGS: "1" },
  });
  await new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (b: Buffer) => {
      out += b.toString();
      if (out.includes("machined API listening")) resolve();
    });
    child.once("exit", (c) => reject(new Error(`agent exited (${c})`)));
  });
  return child;
}

const status = (pid: number, key: string) => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith(`${key}:`))!;
  return Number(line.split(/\s+/)[1]) / 1024;
};

async function main(): Promise<void> {
  const gen = await generateConfigs({ clusterName: "bench", endpoint: "https://127.0.0.1:6443", installDisk: "/dev/vda", talosVersion: "v1.13" });
  const cp = gen.controlplane;
  const keys = (n: number) => cp.replace("machine:\n", `machine:\n${Array.from({ length: n }, (_, i) => `    unknownKey${i}: 1\n`).join("")}`);
  // Near every bound at once: a 1.9 MiB inline manifest and 1,000,000 bytes of machine.files.
  const manifest = Array.from({ length: 40_000 }, (_, i) => `            line ${String(i).padStart(5, "0")}: ${"m".repeat(30)}`).join("\n");
  const largest = cp
    .replace("cluster:\n", `cluster:\n    inlineManifests:\n      - name: big\n        contents: |\n${manifest}\n`)
    .replace("machine:\n", `machine:\n    files:\n      - content: ${"f".repeat(1_000_000)}\n        path: /var/f\n        op: create\n`);

  console.log("config reading (best of 3, this process)");
  const floor = timeLoad(cp);
  console.log(`  floor: generated config (${(cp.length / 1024).toFixed(0)} KiB): ${floor.ms.toFixed(1)} ms, ${floor.steps} steps`);
  for (const n of [1_000, 5_000, 10_000, 20_000, 100_000]) {
    const r = timeLoad(keys(n));
    console.log(`  ${n} unknown keys: ${r.ms.toFixed(1)} ms, ${r.steps} steps — ${r.result}`);
  }
  const big = timeLoad(largest);
  console.log(`  ${(largest.length / 1048576).toFixed(1)} MiB config (inline manifest + files near their bounds): ${big.ms.toFixed(1)} ms — ${big.result}`);

  console.log(`\napply memory (agent ${path.relative(process.cwd(), BUNDLE)}; MiB: peak VmHWM during the call / VmRSS 2 s later)`);
  const dir = mkdtempSync(path.join(tmpdir(), "bench-config-"));
  const port = await freePort();
  const child = await startAgent(dir, port);
  const pid = child.pid!;
  const reset = () => writeFileSync(`/proc/${pid}/clear_refs`, "5");
  const settle = () => new Promise((r) => setTimeout(r, 2000));
  const row = async (name: string, fn: () => Promise<unknown>) => {
    await settle();
    reset();
    const before = status(pid, "VmRSS");
    const t0 = performance.now();
    let outcome = "ok";
    try {
      await fn();
    } catch (e) {
      outcome = `refused: ${String((e as { details?: string }).details ?? e).split("\n")[0].slice(0, 60)}`;
      if ((e as { code?: number }).code === 4) outcome = "no reply within 60 s (DEADLINE_EXCEEDED)";
    }
    const ms = performance.now() - t0;
    const peak = status(pid, "VmHWM");
    await settle();
    console.log(`  ${name.padEnd(34)} before ${before.toFixed(0).padStart(5)}  peak ${peak.toFixed(0).padStart(5)}  after ${status(pid, "VmRSS").toFixed(0).padStart(5)}  ${ms.toFixed(0).padStart(6)} ms  ${outcome}`);
  };
  const creds = talosconfigCreds(gen.talosconfig);
  const insecure = new TestClient(`127.0.0.1:${port}`, insecureTls());
  const apply = (c: TestClient, data: string, mode = Mode.AUTO, dryRun = false) =>
    c.unary(
      MachineService,
      "ApplyConfiguration",
      m.ApplyConfigurationRequestSchema,
      m.ApplyConfigurationResponseSchema,
      { data: new TextEncoder().encode(data), mode, dryRun },
      // A reply that never arrives (an error text too large for the gRPC trailer) shows as DEADLINE_EXCEEDED.
      { deadlineMs: 60_000 },
    );
  const files20 = cp.replace("machine:\n", `machine:\n    files:\n      - content: ${"f".repeat(20 << 20)}\n        path: /var/f\n        op: create\n`);
  const bomb = `version: v1alpha1\nmachine:\n  type: controlplane\nx0: &x0 "${"z".repeat(1 << 20)}"\n${[1, 2, 3].map((i) => `x${i}: &x${i} [${Array(16).fill(`*x${i - 1}`).join(", ")}]`).join("\n")}\n`;
  try {
    await row("maintenance: 20 MiB files, dry run", () => apply(insecure, files20, Mode.AUTO, true));
    await row("maintenance: alias bomb (1 MiB)", () => apply(insecure, bomb));
    await row("maintenance: generated config", () => apply(insecure, cp));
    const admin = new TestClient(`127.0.0.1:${port}`, mtls(creds.ca, creds.crt, creds.key));
    await admin.unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {});
    await row("configured: 20 MiB files, dry run", () => apply(admin, files20, Mode.AUTO, true));
    await row("configured: 20 MiB files, apply", () => apply(admin, files20));
    await row("configured: 10,000 unknown keys", () => apply(admin, keys(10_000)));
    await row(`configured: ${(largest.length / 1048576).toFixed(1)} MiB config, dry run`, () => apply(admin, largest, Mode.AUTO, true));
    await row(`configured: ${(largest.length / 1048576).toFixed(1)} MiB config, apply`, () => apply(admin, largest));
    await row("configured: generated config again", () => apply(admin, cp));
    admin.close();
  } finally {
    insecure.close();
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
