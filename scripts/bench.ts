/**
 * `npm run bench`: machined's figures beside a floor measured in the same run, and their ratios.
 *
 * Contenders (interleaved machined, floor, floor, machined, ... and repeated; medians and spread):
 *   - machined: the bundle (dist/machined.mjs, rebuilt by `npm run bench`) in local mode from a configured
 *     state folder (mTLS, `--services off`);
 *   - floor: a bare @grpc/grpc-js server (scripts/bench-floor.ts) with the same Ed25519 CA, a server
 *     certificate issued the same way, the same client-certificate requirement and the same Version reply.
 * The server runs pinned to CPU 0; this driver and the load client (scripts/bench-load.ts, one process
 * for both contenders) to CPU 1. CPU figures are the server's own CPU time (/proc/<pid>/task/*\/schedstat),
 * which a loaded, shared machine disturbs far less than wall time; the load average is printed.
 *
 * COSI List/Watch over 100 and 1,000 resources run against the real local-mode node (scripts/bench-cosi.ts)
 * and against the floor streaming the replies machined sent, byte for byte (the cost of the wire alone).
 *
 * Environment: BENCH_ROUNDS (default 3), BENCH_LOAD_MS (per load phase, default 4000), BENCH_IDLE_MS
 * (idle window, default 5000), BENCH_PARTS (default "sessions,cosi": either alone runs only that part), BENCH_SERVICES=1 adds
 * Bootstrap → etcd healthy (root, containerd, etcd).
 */
import "reflect-metadata";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { createInterface } from "node:readline";
import * as tls from "node:tls";
import { build } from "esbuild";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { MachineService } from "../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../src/machinery/api/gen/machine/machine_pb.js";
import * as s from "../src/machinery/api/gen/cosi/state_pb.js";
import { generateConfigs } from "../src/machinery/generate/index.js";
import { issueServerCert } from "../src/machinery/pki/issue.js";
import { tlsKeyPem } from "../src/machinery/pki/pem.js";
import { TestClient, insecureTls, mtls } from "../test/helpers/client.js";
import { talosconfigCreds, type Creds } from "../test/api/harness.js";

// The driver's own test client connects by IP; its deprecation notice is noise in the report.
process.noDeprecation = true;

const TOP = path.resolve(import.meta.dirname, "..");
const BUNDLE = path.join(TOP, "dist/machined.mjs");
const HELPERS = path.join(TOP, "build/bench");
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const LOAD_MS = Number(process.env.BENCH_LOAD_MS ?? 4000);
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 5000);
const TICK_MS = 1000 / 100; // USER_HZ
const PINNED = os.cpus().length >= 2;
const SERVER_CPU = "0";
const CLIENT_CPU = "1";
const VERSION_PATH = "/machine.MachineService/Version";
const PARTS = new Set((process.env.BENCH_PARTS ?? "sessions,cosi").split(","));

// ---------------------------------------------------------------------------------------------- helpers

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const wallNow = () => performance.timeOrigin + performance.now();
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const median = (xs: number[]) => {
  const v = sorted(xs);
  if (v.length === 0) return Number.NaN;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
};

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, "127.0.0.1", () => {
      const p = (srv.address() as { port: number }).port;
      srv.close(() => resolve(p));
    });
  });
}

/** The process's own CPU time in ms, all threads (schedstat is in ns, unlike the 10 ms ticks of stat). */
function cpuMs(pid: number): number {
  let ns = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      // thread exited between readdir and read
    }
  }
  return ns / 1e6;
}

/** CPU of reaped child processes (cutime + cstime), in ms (tick resolution). */
function childCpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(f[13]) + Number(f[14])) * TICK_MS;
}

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))!;
  return Number(line.split(/\s+/)[1]) / 1024;
}

const loadavg = () => os.loadavg().map((x) => x.toFixed(2)).join(" ");

function have(bin: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${bin}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
const HAVE_PERF = have("perf") && (() => {
  try {
    execFileSync("perf", ["stat", "-x,", "-e", "sched:sched_process_fork", "--", "true"], { stdio: "pipe" });
    return true;
  } catch {
    return false;
  }
})();

/** Spawns `node <args>` pinned to the server CPU. */
function spawnServer(args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  const argv = [process.execPath, ...args];
  const [cmd, ...rest] = PINNED ? ["taskset", "-c", SERVER_CPU, ...argv] : argv;
  return spawn(cmd, rest, { stdio: ["pipe", "pipe", "inherit"], env: { ...process.env, NODE_NO_WARNINGS: "1", ...env } });
}

/** Resolves with the first stdout line matching `re`. */
function waitLine(child: ChildProcess, re: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let buf = "";
    const timer = setTimeout(() => done(new Error(`timed out waiting for ${re}`)), timeoutMs);
    const onData = (b: Buffer) => {
      buf += b.toString();
      const hit = re.exec(buf);
      if (hit) done(undefined, hit);
    };
    const onExit = (c: number | null) => done(new Error(`server exited (${c}) before printing ${re}`));
    const done = (err?: Error, hit?: RegExpExecArray) => {
      clearTimeout(timer);
      child.stdout!.off("data", onData);
      child.off("exit", onExit);
      if (err) reject(err);
      else resolve(hit!);
    };
    child.stdout!.on("data", onData);
    child.once("exit", onExit);
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGKILL");
  await new Promise((r) => child.once("exit", r));
}

/** Retries a full mTLS handshake every 2 ms until one completes; resolves with its wall-clock time. */
async function firstTls(port: number, creds: Creds, deadlineMs = 30_000): Promise<number> {
  const until = performance.now() + deadlineMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const sock = tls.connect({
        host: "127.0.0.1",
        port,
        ca: creds.ca,
        cert: creds.crt,
        key: creds.key,
        ALPNProtocols: ["h2"],
        checkServerIdentity: () => undefined,
      });
      sock.once("secureConnect", () => {
        sock.destroy();
        resolve(true);
      });
      sock.once("error", () => resolve(false));
    });
    if (ok) return wallNow();
    if (performance.now() > until) throw new Error(`no TLS handshake on port ${port} within ${deadlineMs} ms`);
    await sleep(2);
  }
}

/** The load client process (pinned to the client CPU) and its JSON-lines protocol. */
class LoadClient {
  private readonly child: ChildProcess;
  private readonly waiting: Array<(v: Record<string, unknown>) => void> = [];

  constructor() {
    const argv = [process.execPath, path.join(HELPERS, "bench-load.mjs")];
    const [cmd, ...rest] = PINNED ? ["taskset", "-c", CLIENT_CPU, ...argv] : argv;
    this.child = spawn(cmd, rest, { stdio: ["pipe", "pipe", "inherit"], env: { ...process.env, NODE_NO_WARNINGS: "1" } });
    createInterface({ input: this.child.stdout! }).on("line", (l) => this.waiting.shift()?.(JSON.parse(l)));
  }

  async send<T = Record<string, unknown>>(cmd: Record<string, unknown>): Promise<T> {
    const res = await new Promise<Record<string, unknown>>((resolve) => {
      this.waiting.push(resolve);
      this.child.stdin!.write(`${JSON.stringify(cmd)}\n`);
    });
    if (!res.ok) throw new Error(`load client: ${cmd.op}: ${String(res.error)}`);
    return res as T;
  }

  connect(port: number, c: Creds) {
    return this.send({ op: "connect", address: `127.0.0.1:${port}`, ca: c.ca, crt: c.crt, key: c.key });
  }

  async close(): Promise<void> {
    this.child.stdin!.end();
    await stop(this.child);
  }
}

interface Stat {
  med: number;
  min: number;
  max: number;
  n: number;
}
const stat = (xs: number[]): Stat => ({ med: median(xs), min: Math.min(...xs), max: Math.max(...xs), n: xs.length });

// --------------------------------------------------------------------------------------------- contenders

interface Certs {
  creds: Creds;
  serverCert: string;
  serverKey: string;
}

interface Contender {
  name: "machined" | "floor";
  /** Starts the server; resolves once it printed its port (first TLS is measured separately). */
  start(): Promise<{ child: ChildProcess; port: number; t0: number }>;
}

async function machinedContender(template: string): Promise<Contender> {
  return {
    name: "machined",
    async start() {
      const dir = mkdtempSync(path.join(os.tmpdir(), "machined-bench-"));
      cpSync(template, dir, { recursive: true });
      const port = await freePort();
      const t0 = wallNow();
      const child = spawnServer([BUNDLE, "start", "--state-dir", dir, "--listen", `127.0.0.1:${port}`, "--services", "off"]);
      child.once("exit", () => rmSync(dir, { recursive: true, force: true }));
      return { child, port, t0 };
    },
  };
}

function floorContender(setupFile: string): Contender {
  return {
    name: "floor",
    async start() {
      const port = await freePort();
      const setup = JSON.parse(readFileSync(setupFile, "utf8"));
      writeFileSync(setupFile, JSON.stringify({ ...setup, port }));
      const t0 = wallNow();
      const child = spawnServer([path.join(HELPERS, "bench-floor.mjs"), setupFile]);
      return { child, port, t0 };
    },
  };
}

interface SessionFigures {
  startMs: number;
  startCpuMs: number;
  rssIdle: number;
  idleCpuPerS: number;
  idleChildCpuPerS: number;
  idleForks?: number;
  cpuPerCall: Record<number, number>;
  callsPerS: Record<number, number>;
  p50: Record<number, number>;
  p99: Record<number, number>;
  rssAfter: number;
}

/** Forks and task-clock of `pid` over `ms`, from perf's sched_process_fork tracepoint. */
async function perfForks(pid: number, ms: number): Promise<number | undefined> {
  if (!HAVE_PERF) return undefined;
  return new Promise((resolve) => {
    const p = spawn("perf", ["stat", "-x,", "-e", "sched:sched_process_fork", "-p", String(pid), "--", "sleep", String(ms / 1000)], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    p.stderr!.on("data", (b: Buffer) => (err += b));
    p.on("exit", () => {
      const line = err.split("\n").find((l) => l.includes("sched_process_fork"));
      // "<not counted>": the process never ran during the window, so it forked nothing either.
      const field = line?.split(",")[0];
      const n = field === "<not counted>" ? 0 : Number(field ?? Number.NaN);
      resolve(Number.isFinite(n) ? n : undefined);
    });
  });
}

async function session(c: Contender, certs: Certs, load: LoadClient, startOnly: boolean): Promise<Partial<SessionFigures>> {
  const { child, port, t0 } = await c.start();
  try {
    const tFirst = await firstTls(port, certs.creds);
    const startCpuMs = cpuMs(child.pid!);
    const out: Partial<SessionFigures> = { startMs: tFirst - t0, startCpuMs };
    if (startOnly) return out;
    // One call (the first one pays for lazy work), then let the process settle before "idle".
    await load.connect(port, certs.creds);
    await load.send({ op: "unary", path: VERSION_PATH, req: "" });
    await load.send({ op: "close" });
    await sleep(2000);
    out.rssIdle = rssMiB(child.pid!);
    const cpu0 = cpuMs(child.pid!);
    const child0 = childCpuMs(child.pid!);
    const forksP = perfForks(child.pid!, IDLE_MS);
    await sleep(IDLE_MS);
    out.idleForks = await forksP;
    out.idleCpuPerS = (cpuMs(child.pid!) - cpu0) / (IDLE_MS / 1000);
    out.idleChildCpuPerS = (childCpuMs(child.pid!) - child0) / (IDLE_MS / 1000);
    await load.connect(port, certs.creds);
    out.cpuPerCall = {};
    out.callsPerS = {};
    out.p50 = {};
    out.p99 = {};
    for (const conc of [1, 32]) {
      await load.send({ op: "load", path: VERSION_PATH, c: conc, ms: 1000 }); // warm-up
      const before = cpuMs(child.pid!);
      const r = await load.send<{ calls: number; elapsedMs: number; p50: number; p99: number }>({ op: "load", path: VERSION_PATH, c: conc, ms: LOAD_MS });
      const used = cpuMs(child.pid!) - before;
      out.cpuPerCall[conc] = (used * 1000) / r.calls; // µs
      out.callsPerS[conc] = r.calls / (r.elapsedMs / 1000);
      out.p50[conc] = r.p50;
      out.p99[conc] = r.p99;
    }
    await load.send({ op: "close" });
    out.rssAfter = rssMiB(child.pid!);
    return out;
  } finally {
    await stop(child);
  }
}

// -------------------------------------------------------------------------------------------------- COSI

const COSI_NS = "runtime";
const COSI_TYPE = "MountStatuses.runtime.talos.dev";
const WATCHERS = 100;

interface CosiFigures {
  /** Server CPU of the first List after the resources were written: every resource is encoded then. */
  coldListCpuMs: number;
  listMs: number[];
  listCpuMs: number[];
  count: number;
  watchMs: number[];
  watchCpuMs: number[];
}

async function cosiRun(
  child: ChildProcess,
  port: number,
  certs: Certs,
  load: LoadClient,
  bump: () => Promise<void>,
): Promise<CosiFigures> {
  await load.connect(port, certs.creds);
  const listReq = Buffer.from(toBinary(s.ListRequestSchema, create(s.ListRequestSchema, { namespace: COSI_NS, type: COSI_TYPE }))).toString("base64");
  const cold = cpuMs(child.pid!);
  await load.send({ op: "streams", path: "/cosi.resource.State/List", req: listReq, times: 1 });
  const coldListCpuMs = cpuMs(child.pid!) - cold;
  await load.send({ op: "streams", path: "/cosi.resource.State/List", req: listReq, times: 2 }); // warm-up
  const listMs: number[] = [];
  const listCpuMs: number[] = [];
  let count = 0;
  for (let i = 0; i < 7; i++) {
    const before = cpuMs(child.pid!);
    const r = await load.send<{ ms: number[]; count: number }>({ op: "streams", path: "/cosi.resource.State/List", req: listReq, times: 1 });
    listCpuMs.push(cpuMs(child.pid!) - before);
    listMs.push(r.ms[0]);
    count = r.count;
  }
  const watchReq = Buffer.from(
    toBinary(s.WatchRequestSchema, create(s.WatchRequestSchema, { namespace: COSI_NS, type: COSI_TYPE, apiVersion: 1 })),
  ).toString("base64");
  await load.send({ op: "watch", path: "/cosi.resource.State/Watch", req: watchReq, n: WATCHERS });
  const watchMs: number[] = [];
  const watchCpuMs: number[] = [];
  for (let i = 0; i < 6; i++) {
    await load.send({ op: "watchArm" });
    const before = cpuMs(child.pid!);
    const t0 = wallNow();
    await bump();
    const { lastAt } = await load.send<{ lastAt: number }>({ op: "watchWait" });
    const used = cpuMs(child.pid!) - before;
    if (i === 0) continue; // warm-up
    watchMs.push(lastAt - t0);
    watchCpuMs.push(used);
  }
  await load.send({ op: "unwatch" });
  await load.send({ op: "close" });
  return { coldListCpuMs, listMs, listCpuMs, count, watchMs, watchCpuMs };
}

function lineWriter(child: ChildProcess) {
  const rl = createInterface({ input: child.stdout! });
  const waiting: Array<(l: string) => void> = [];
  rl.on("line", (l) => waiting.shift()?.(l));
  return (line: string) =>
    new Promise<string>((resolve) => {
      waiting.push(resolve);
      child.stdin!.write(`${line}\n`);
    });
}

async function cosiBench(template: string, certs: Certs, floorSetup: string, load: LoadClient) {
  const results: Record<number, { machined: CosiFigures[]; floor: CosiFigures[] }> = {};
  for (const n of [100, 1000]) {
    results[n] = { machined: [], floor: [] };
    for (let round = 0; round < 2; round++) {
      // machined: the real node with n bench resources in its store.
      const dir = mkdtempSync(path.join(os.tmpdir(), "machined-bench-cosi-"));
      cpSync(template, dir, { recursive: true });
      const child = spawnServer([path.join(HELPERS, "bench-cosi.mjs"), dir]);
      let listCapture: string[] = [];
      try {
        const port = Number((await waitLine(child, /cosi listening (\d+)/))[1]);
        const ask = lineWriter(child);
        await ask(`populate ${n}`);
        await sleep(500);
        results[n].machined.push(await cosiRun(child, port, certs, load, async () => void (await ask("bump"))));
        // Capture what machined sent, for the floor to send byte for byte.
        await load.connect(port, certs.creds);
        const listReq = Buffer.from(toBinary(s.ListRequestSchema, create(s.ListRequestSchema, { namespace: COSI_NS, type: COSI_TYPE }))).toString("base64");
        listCapture = (await load.send<{ msgs: string[] }>({ op: "stream", path: "/cosi.resource.State/List", req: listReq })).msgs;
        await load.send({ op: "close" });
      } finally {
        await stop(child);
        rmSync(dir, { recursive: true, force: true });
      }
      // floor: the same replies, pre-encoded.
      const one = fromBinary(s.ListResponseSchema, Buffer.from(listCapture[0], "base64")).resource!;
      const event = toBinary(
        s.WatchResponseSchema,
        create(s.WatchResponseSchema, { event: [{ eventType: s.EventType.UPDATED, resource: one, old: one }] }),
      );
      const setup = JSON.parse(readFileSync(floorSetup, "utf8"));
      writeFileSync(floorSetup, JSON.stringify({ ...setup, port: 0, list: listCapture, watchEvent: Buffer.from(event).toString("base64") }));
      const floor = spawnServer([path.join(HELPERS, "bench-floor.mjs"), floorSetup]);
      try {
        const port = Number((await waitLine(floor, /floor listening (\d+)/))[1]);
        const ask = lineWriter(floor);
        results[n].floor.push(await cosiRun(floor, port, certs, load, async () => void (await ask("bump"))));
      } finally {
        await stop(floor);
      }
    }
  }
  return results;
}

// ------------------------------------------------------------------------------------------------- setup

async function buildHelpers(): Promise<void> {
  mkdirSync(HELPERS, { recursive: true });
  await build({
    entryPoints: {
      "bench-floor": path.join(TOP, "scripts/bench-floor.ts"),
      "bench-load": path.join(TOP, "scripts/bench-load.ts"),
      "bench-cosi": path.join(TOP, "scripts/bench-cosi.ts"),
    },
    outdir: HELPERS,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    target: "node20",
    format: "esm",
    charset: "ascii",
    // Maps let a --cpu-prof of a helper (bench-cosi.mjs) be read against the sources.
    sourcemap: "linked",
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    external: ["koffi"],
    logLevel: "warning",
  });
}

/** A configured state folder: maintenance start, apply-config, wait for mTLS, stop. Copied per run. */
async function configuredTemplate(controlplane: string, creds: Creds): Promise<string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "machined-bench-template-"));
  const port = await freePort();
  const child = spawnServer([BUNDLE, "start", "--state-dir", dir, "--listen", `127.0.0.1:${port}`, "--services", "off"]);
  try {
    await waitLine(child, /machined API listening/);
    const insecure = new TestClient(`127.0.0.1:${port}`, insecureTls());
    await insecure.unary(MachineService, "ApplyConfiguration", m.ApplyConfigurationRequestSchema, m.ApplyConfigurationResponseSchema, {
      data: new TextEncoder().encode(controlplane),
      mode: m.ApplyConfigurationRequest_Mode.AUTO,
    });
    insecure.close();
    const c = new TestClient(`127.0.0.1:${port}`, mtls(creds.ca, creds.crt, creds.key));
    for (let i = 0; ; i++) {
      try {
        await c.unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {});
        break;
      } catch (err) {
        if (i > 100) throw err;
        await sleep(100);
      }
    }
    c.close();
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
  }
  return dir;
}

/** The Version reply machined sends (raw bytes), for the floor to answer with the same content. */
async function captureVersion(template: string, certs: Certs, load: LoadClient): Promise<string> {
  const c = await machinedContender(template);
  const { child, port } = await c.start();
  try {
    await firstTls(port, certs.creds);
    await load.connect(port, certs.creds);
    const { res } = await load.send<{ res: string }>({ op: "unary", path: VERSION_PATH, req: "" });
    await load.send({ op: "close" });
    return res;
  } finally {
    await stop(child);
  }
}

function hostAddresses(): string[] {
  return Object.values(os.networkInterfaces())
    .flat()
    .filter((a): a is os.NetworkInterfaceInfo => !!a && !a.internal)
    .map((a) => a.address.replace(/%.*$/, ""));
}

// ------------------------------------------------------------------------------------------------ report

const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : "-");
const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : "-");
const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : "-");

interface Row {
  figure: string;
  machined: Stat;
  floor?: Stat;
  unit: string;
  fmt: (x: number) => string;
  /** "le": machined/floor must be ≤ target; "ge": ≥ target; "abs": machined median ≤ target (absolute). */
  target?: { kind: "le" | "ge" | "abs"; value: number };
}

function cell(st: Stat | undefined, fmt: (x: number) => string): string {
  if (!st || !Number.isFinite(st.med)) return "-";
  return st.n > 1 ? `${fmt(st.med)} [${fmt(st.min)}–${fmt(st.max)}]` : fmt(st.med);
}

function printTable(rows: Row[]): { misses: string[] } {
  const head = ["figure", "machined (median [min–max])", "floor", "ratio", "target", ""];
  const lines = rows.map((r) => {
    const ratio = r.floor && r.floor.med > 0 ? r.machined.med / r.floor.med : Number.NaN;
    let target = "";
    let verdict = "";
    if (r.target) {
      const { kind, value } = r.target;
      target = kind === "abs" ? `≤ ${value} ${r.unit}` : `${kind === "le" ? "≤" : "≥"} ${value.toFixed(2)}`;
      const ok = kind === "abs" ? r.machined.med <= value : kind === "le" ? ratio <= value : ratio >= value;
      verdict = ok ? "ok" : "MISS";
    }
    return [`${r.figure} (${r.unit})`, cell(r.machined, r.fmt), cell(r.floor, r.fmt), Number.isFinite(ratio) ? ratio.toFixed(2) : "-", target, verdict];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmtLine = (l: string[]) => l.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  console.log(fmtLine(head));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const l of lines) console.log(fmtLine(l));
  return { misses: lines.filter((l) => l[5] === "MISS").map((l) => l[0]) };
}

// -------------------------------------------------------------------------------------------------- main

async function main() {
  if (!existsSync(BUNDLE)) throw new Error("dist/machined.mjs is missing: run `npm run build` first (npm run bench does)");
  if (PINNED) execFileSync("taskset", ["-a", "-p", "-c", CLIENT_CPU, String(process.pid)], { stdio: "ignore" });
  const la0 = loadavg();
  console.log(`machined bench: ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? "?"}), node ${process.version}, load average ${la0} at start`);
  console.log(
    PINNED
      ? `server pinned to CPU ${SERVER_CPU}; this driver and the load client to CPU ${CLIENT_CPU}. The machine is shared: CPU-time figures are the ones to trust.`
      : "one CPU only: server and client share it; figures are indicative only.",
  );

  await buildHelpers();
  const cfgs = await generateConfigs({ clusterName: "bench", endpoint: "https://127.0.0.1:6443", talosVersion: "v1.13" });
  const creds = talosconfigCreds(cfgs.talosconfig);
  const hostname = os.hostname();
  // The floor's server certificate: issued from the same Ed25519 OS CA with the SANs machined uses.
  const server = await issueServerCert(
    { crt: cfgs.secrets.certs.os.crt, key: cfgs.secrets.certs.os.key },
    { commonName: hostname, ipSANs: [...new Set([...hostAddresses(), "127.0.0.1", "::1"])], dnsSANs: [hostname], validityMs: 24 * 3600_000 },
  );
  const certs: Certs = { creds, serverCert: server.crt, serverKey: tlsKeyPem(server.key) };
  const template = await configuredTemplate(cfgs.controlplane, creds);
  const load = new LoadClient();
  const floorSetup = path.join(mkdtempSync(path.join(os.tmpdir(), "machined-bench-floor-")), "setup.json");
  try {
    const version = await captureVersion(template, certs, load);
    writeFileSync(floorSetup, JSON.stringify({ host: "127.0.0.1", port: 0, caPem: creds.ca, certPem: certs.serverCert, keyPem: certs.serverKey, version }));
    const contenders = [await machinedContender(template), floorContender(floorSetup)];

    // Start-up alone, interleaved, more often (cheap); then full sessions.
    const figs: Record<string, Partial<SessionFigures>[]> = { machined: [], floor: [] };
    const starts: Record<string, Partial<SessionFigures>[]> = { machined: [], floor: [] };
    for (let i = 0; i < (PARTS.has("sessions") ? 4 : 0); i++) {
      const order = i % 2 ? [...contenders].reverse() : contenders;
      for (const c of order) starts[c.name].push(await session(c, certs, load, true));
    }
    for (let r = 0; r < (PARTS.has("sessions") ? ROUNDS : 0); r++) {
      const order = r % 2 ? [...contenders].reverse() : contenders;
      for (const c of order) {
        const f = await session(c, certs, load, false);
        figs[c.name].push(f);
        starts[c.name].push({ startMs: f.startMs, startCpuMs: f.startCpuMs });
        process.stderr.write(`  round ${r + 1}/${ROUNDS} ${c.name}: done (load average ${loadavg()})\n`);
      }
    }
    const cosi = PARTS.has("cosi") ? await cosiBench(template, certs, floorSetup, load) : undefined;

    const pick = (name: string, get: (f: Partial<SessionFigures>) => number | undefined, from = figs) =>
      stat(from[name].map(get).filter((x): x is number => x !== undefined && Number.isFinite(x)));
    const both = (figure: string, unit: string, fmt: (x: number) => string, get: (f: Partial<SessionFigures>) => number | undefined, target?: Row["target"], from = figs): Row => ({
      figure,
      unit,
      fmt,
      machined: pick("machined", get, from),
      floor: pick("floor", get, from),
      target,
    });
    const rows: Row[] = [
      both("server CPU per Version call, c=1", "µs", f0, (f) => f.cpuPerCall?.[1], { kind: "le", value: 1.1 }),
      both("server CPU per Version call, c=32", "µs", f0, (f) => f.cpuPerCall?.[32], { kind: "le", value: 1.1 }),
      both("Version calls/s, c=1", "1/s", f0, (f) => f.callsPerS?.[1], { kind: "ge", value: 0.95 }),
      both("Version calls/s, c=32", "1/s", f0, (f) => f.callsPerS?.[32], { kind: "ge", value: 0.95 }),
      both("Version p50, c=1", "ms", f2, (f) => f.p50?.[1]),
      both("Version p99, c=1", "ms", f2, (f) => f.p99?.[1]),
      both("Version p50, c=32", "ms", f2, (f) => f.p50?.[32]),
      both("Version p99, c=32", "ms", f2, (f) => f.p99?.[32]),
      both("process start → first TLS handshake", "ms", f0, (f) => f.startMs, { kind: "le", value: 1.5 }, starts),
      both("server CPU until first TLS handshake", "ms", f0, (f) => f.startCpuMs, undefined, starts),
      both("RSS idle, configured, no services", "MiB", f1, (f) => f.rssIdle, { kind: "le", value: 1.15 }),
      both("RSS after a c=32 run", "MiB", f1, (f) => f.rssAfter),
      both("idle CPU, own", "ms/s", f2, (f) => f.idleCpuPerS),
      both("idle CPU, child processes", "ms/s", f2, (f) => f.idleChildCpuPerS),
    ];
    if (HAVE_PERF) rows.push(both(`forks/clones at rest per ${IDLE_MS / 1000} s`, "n", f0, (f) => f.idleForks));
    for (const n of cosi ? [100, 1000] : []) {
      const cm = cosi![n].machined;
      const cf = cosi![n].floor;
      const flat = (xs: CosiFigures[], k: "listMs" | "listCpuMs" | "watchMs" | "watchCpuMs") => stat(xs.flatMap((x) => x[k]));
      const count = cm[0]?.count ?? 0;
      rows.push(
        { figure: `COSI List of ${n}${count > n ? ` (+${count - n} others)` : ""} resources, wall`, unit: "ms", fmt: f1, machined: flat(cm, "listMs"), floor: flat(cf, "listMs"), target: n === 1000 ? { kind: "abs", value: 50 } : undefined },
        { figure: `COSI List of ${n} resources, server CPU`, unit: "ms", fmt: f1, machined: flat(cm, "listCpuMs"), floor: flat(cf, "listCpuMs") },
        { figure: `COSI first List of ${n} (encodes each), server CPU`, unit: "ms", fmt: f1, machined: stat(cm.map((x) => x.coldListCpuMs)), floor: stat(cf.map((x) => x.coldListCpuMs)) },
        { figure: `Watch event → ${WATCHERS} watchers (kind of ${n}), wall`, unit: "ms", fmt: f1, machined: flat(cm, "watchMs"), floor: flat(cf, "watchMs"), target: { kind: "abs", value: 20 } },
        { figure: `Watch event → ${WATCHERS} watchers (kind of ${n}), server CPU`, unit: "ms", fmt: f1, machined: flat(cm, "watchCpuMs"), floor: flat(cf, "watchCpuMs") },
      );
    }
    const idleTarget: Row = {
      figure: "idle CPU, own + children",
      unit: "ms/s",
      fmt: f2,
      machined: pick("machined", (f) => (f.idleCpuPerS ?? 0) + (f.idleChildCpuPerS ?? 0)),
      floor: pick("floor", (f) => (f.idleCpuPerS ?? 0) + (f.idleChildCpuPerS ?? 0)),
      target: { kind: "abs", value: 1 },
    };
    rows.splice(rows.findIndex((r) => r.figure === "idle CPU, child processes") + 1, 0, idleTarget);
    rows.push({ figure: "RSS idle (absolute)", unit: "MiB", fmt: f1, machined: pick("machined", (f) => f.rssIdle), target: { kind: "abs", value: 72 } });

    console.log("");
    console.log(`${ROUNDS} full rounds (+4 start-only), load phases ${LOAD_MS} ms after a 1 s warm-up, idle window ${IDLE_MS} ms; COSI: 2 rounds × 7 Lists, 5 Watch events`);
    console.log("");
    const { misses } = printTable(rows);
    console.log("");
    console.log(`load average ${la0} at start, ${loadavg()} at end`);
    console.log(misses.length ? `targets missed: ${misses.join("; ")}` : "every target met");
  } finally {
    await load.close();
    rmSync(template, { recursive: true, force: true });
    rmSync(path.dirname(floorSetup), { recursive: true, force: true });
  }
  if (process.env.BENCH_SERVICES === "1") await benchServices();
}

/** Bootstrap → etcd healthy and RSS with containerd + etcd (root, Debian's containerd and etcd). */
async function benchServices() {
  if (process.getuid?.() !== 0 || !have("containerd") || !have("etcd")) {
    console.log("services: skipped (needs root and Debian's containerd + etcd; `make deps-system`)");
    return;
  }
  const inUse = await new Promise<boolean>((resolve) => {
    const srv = createServer().once("error", () => resolve(true)).listen(2379, "127.0.0.1", () => srv.close(() => resolve(false)));
  });
  if (inUse) {
    console.log("services: skipped (127.0.0.1:2379 is in use; etcd needs it)");
    return;
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), "machined-bench-svc-"));
  const port = await freePort();
  const child = spawn(process.execPath, [BUNDLE, "start", "--state-dir", dir, "--listen", `127.0.0.1:${port}`, "--services", "on"], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, NODE_NO_WARNINGS: "1" },
  });
  try {
    await waitLine(child, /machined API listening/);
    const cfgs = await generateConfigs({ clusterName: "bench", endpoint: "https://127.0.0.1:6443", talosVersion: "v1.13" });
    const insecure = new TestClient(`127.0.0.1:${port}`, insecureTls());
    await insecure.unary(MachineService, "ApplyConfiguration", m.ApplyConfigurationRequestSchema, m.ApplyConfigurationResponseSchema, {
      data: new TextEncoder().encode(cfgs.controlplane),
      mode: m.ApplyConfigurationRequest_Mode.AUTO,
    });
    insecure.close();
    const creds = talosconfigCreds(cfgs.talosconfig);
    const c = new TestClient(`127.0.0.1:${port}`, mtls(creds.ca, creds.crt, creds.key));
    const etcdState = async () => {
      const l = await c.unary(MachineService, "ServiceList", EmptySchema, m.ServiceListResponseSchema, {});
      return l.messages[0].services.find((x) => x.id === "etcd");
    };
    for (let i = 0; i < 300 && (await etcdState().catch(() => undefined))?.state !== "Waiting"; i++) await sleep(100);
    const t0 = performance.now();
    await c.unary(MachineService, "Bootstrap", m.BootstrapRequestSchema, m.BootstrapResponseSchema, {});
    for (let i = 0; i < 600; i++) {
      const e = await etcdState();
      if (e?.state === "Running" && e.health?.healthy) break;
      await sleep(50);
    }
    console.log(`Bootstrap → etcd healthy: ${((performance.now() - t0) / 1000).toFixed(2)} s`);
    await sleep(2000);
    console.log(`agent RSS with containerd + etcd running: ${rssMiB(child.pid!).toFixed(1)} MiB`);
    c.close();
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
