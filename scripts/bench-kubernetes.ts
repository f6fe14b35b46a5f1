/**
 * `npm run bench:kubernetes` (root; `make kube-images && make registry` first): how long a node takes from
 * `bootstrap` to a working Kubernetes node, and what it costs in memory, in a local sandbox (the same node as
 * test/sandbox/kubernetes.test.ts: upstream images through the loopback registry, native speed).
 *
 * Figures, each from `bootstrap` (the call's reply):
 *   - etcd running (its process exists), the API server's process started, /readyz answering ok,
 *   - the node Ready, every kube-system pod Running and ready, the server-side health check passing;
 * and the floor measured in the same run, what the components take by themselves and machined cannot go below:
 *   - the API server's own start → /readyz, and flanneld's start → node Ready (the CNI config it writes is what the
 *     kubelet waits for), from the processes' start times;
 * so the rest is what the node's orchestration adds: bootstrap → the API server's process (etcd start, secrets,
 * rendering the static pods, the kubelet picking them up, the image pulls from the loopback registry) and API
 * server ready → flanneld (the bootstrap manifests applied, the DaemonSet scheduled, its image pulled).
 * Memory: RSS of machined (in maintenance mode before the config, and after Ready) and of each component after
 * every kube-system pod is Running, summed over the component's processes (the sandbox's process tree).
 *
 * CPU at rest: once every pod is Running, CPU-seconds per minute of machined (its own, and the processes it
 * spawned and reaped in the window) and of each component, over `--rest <s>` seconds (default 60). The components
 * are the reference: they are what upstream's node runs too, so machined's share is read beside theirs.
 * `--cpu-prof <dir>` runs the node under V8's CPU profiler and prints where machined's own CPU went in that window
 * (self time by function and by source file of the bundle).
 *
 * `--json <file>` also writes the figures.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as https from "node:https";
import * as k8s from "@kubernetes/client-node";
import { parse } from "yaml";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { applyPatches, parsePatch } from "../src/machinery/config/patch/index.js";
import { generateConfigs } from "../src/machinery/generate/index.js";
import * as m from "../src/machinery/api/gen/machine/machine_pb.js";
import { MachineService } from "../src/machinery/api/gen/machine/machine_pb.js";
import * as c from "../src/machinery/api/gen/cluster/cluster_pb.js";
import { ClusterService } from "../src/machinery/api/gen/cluster/cluster_pb.js";
import { DataSchema } from "../src/machinery/api/gen/common/common_pb.js";
import { tlsKeyPem } from "../src/machinery/pki/pem.js";
import { TestClient, insecureTls, mtls } from "../test/helpers/client.js";
import { mirrorsPatch, sandboxSkipReason, startLab, startSandbox, until, untarOne } from "../test/helpers/sandbox.js";

const args = process.argv.slice(2);
const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const jsonOut = option("--json");
const restSeconds = Number(option("--rest") ?? 60);
const profileDir = option("--cpu-prof");
if (!(restSeconds > 0)) {
  console.error(`bench-kubernetes: --rest wants a number of seconds, got ${JSON.stringify(option("--rest"))}`);
  process.exit(2);
}
const VERSION = "1.37.2";
const MIN = 60_000;

const skip = await sandboxSkipReason({ images: ["siderolabs/kubelet", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "coredns/coredns", "siderolabs/flannel", "pause"] });
if (skip) {
  console.error(`bench-kubernetes: cannot run here: ${skip}`);
  process.exit(2);
}

// ---- /proc: the sandbox's process tree, process start times, RSS ----
const CLK_TCK = 100; // USER_HZ on Linux
const bootTimeMs = Number(/^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))![1]) * 1000;

interface Proc {
  pid: number;
  ppid: number;
  comm: string;
  cmdline: string;
  startMs: number;
  rssKiB: number;
}

function readProc(pid: number): Proc | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = stat.lastIndexOf(")");
    const comm = stat.slice(stat.indexOf("(") + 1, close);
    const rest = stat.slice(close + 2).split(" ");
    // Fields after the comm: state(3) ppid(4) ... starttime(22); rest[0] is field 3.
    const ppid = Number(rest[1]);
    const startMs = bootTimeMs + (Number(rest[19]) / CLK_TCK) * 1000;
    const rss = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ").trim();
    return { pid, ppid, comm, cmdline, startMs, rssKiB: rss ? Number(rss[1]) : 0 };
  } catch {
    return undefined; // gone meanwhile
  }
}

function allProcs(): Proc[] {
  const out: Proc[] = [];
  for (const d of readdirSync("/proc")) if (/^\d+$/.test(d)) {
    const p = readProc(Number(d));
    if (p) out.push(p);
  }
  return out;
}

/** CPU seconds of a process: its own (utime+stime) and its reaped children's (cutime+cstime). */
function cpuOf(pid: number): { own: number; children: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // rest[0] is field 3; utime, stime, cutime, cstime are fields 14-17.
    return { own: (Number(rest[11]) + Number(rest[12])) / CLK_TCK, children: (Number(rest[13]) + Number(rest[14])) / CLK_TCK };
  } catch {
    return undefined;
  }
}

/**
 * CPU-seconds per minute by component over `seconds`: processes alive at both ends count their difference, those
 * started in the window all of theirs; those that ended in the window are counted only through their parent's
 * reaped-children time (machined's spawns show there).
 */
async function cpuAtRest(root: number, seconds: number): Promise<Record<string, number>> {
  const before = new Map(tree(root).map((p) => [p.pid, { startMs: p.startMs, cpu: cpuOf(p.pid) }]));
  const t0 = Date.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const perMinute = 60 / ((Date.now() - t0) / 1000);
  const sums: Record<string, number> = {};
  const add = (k: string, v: number) => (sums[k] = (sums[k] ?? 0) + v);
  for (const p of tree(root)) {
    const now = cpuOf(p.pid);
    if (!now) continue;
    const was = before.get(p.pid);
    const same = was?.cpu && was.startMs === p.startMs;
    const name = component(p, root);
    add(name, now.own - (same ? was.cpu!.own : 0));
    if (name === "machined") add("machined's reaped children", now.children - (same ? was.cpu!.children : 0));
  }
  return Object.fromEntries(Object.entries(sums).sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, Math.round(v * perMinute * 10) / 10]));
}

/** V8's CPU profile: nodes with call frames, samples (node ids) and the µs between them, on CLOCK_MONOTONIC. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Self time (ms) by function and by bundled source file, for the samples of `profile` within [fromUs, toUs]. */
function selfTime(profile: CpuProfile, fromUs: number, toUs: number, sourceOf: (line: number) => string) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const fns = new Map<string, number>();
  const files = new Map<string, number>();
  let t = profile.startTime;
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    if (t < fromUs || t > toUs) continue;
    const dt = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    const f = byId.get(profile.samples[i])!;
    if (f.functionName === "(idle)") continue;
    total += dt;
    const file = f.url ? sourceOf(f.lineNumber + 1) : f.functionName;
    fns.set(`${f.functionName || "(anonymous)"} ${file}:${f.lineNumber + 1}`, (fns.get(`${f.functionName || "(anonymous)"} ${file}:${f.lineNumber + 1}`) ?? 0) + dt);
    files.set(file, (files.get(file) ?? 0) + dt);
  }
  const top = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n);
  return { total, functions: top(fns, 25), files: top(files, 20) };
}

/** Which source file a line of dist/machined.cjs comes from (esbuild marks each module with a `// path` line). */
function bundleSources(): (line: number) => string {
  const lines = readFileSync(new URL("../dist/machined.cjs", import.meta.url), "utf8").split("\n");
  const starts: [number, string][] = [];
  lines.forEach((l, i) => {
    const hit = /^\/\/ ((?:src|node_modules)\/\S+)$/.exec(l);
    if (hit) starts.push([i + 1, hit[1]]);
  });
  return (line) => {
    let lo = 0;
    let hi = starts.length - 1;
    let found = "(bundle prelude)";
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid][0] <= line) {
        found = starts[mid][1];
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  };
}

const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

const cgroupOf = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cgroup`, "utf8");
  } catch {
    return "";
  }
};

/**
 * The node's processes: those below `root` (the sandbox), and those in the node's cgroup folder (machined-<hash>,
 * read from the tree's own cgroups), which holds the containers: their shims leave the tree when they daemonize.
 */
function tree(root: number): Proc[] {
  const procs = allProcs();
  const children = new Map<number, Proc[]>();
  for (const p of procs) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const mine = new Set<number>();
  const walk = (pid: number) => {
    mine.add(pid);
    for (const ch of children.get(pid) ?? []) walk(ch.pid);
  };
  walk(root);
  const folders = new Set<string>();
  for (const pid of mine) for (const hit of cgroupOf(pid).matchAll(/\/(machined-[0-9a-f]{12})\b/g)) folders.add(hit[1]);
  return procs.filter((p) => mine.has(p.pid) || [...folders].some((f) => cgroupOf(p.pid).includes(`/${f}`)));
}

/** Which component a process is part of (the name the figures use). */
function component(p: Proc, root: number): string {
  if (p.cmdline.includes("machined.mjs") || p.cmdline.includes("machined.cjs")) {
    // The launcher stays on the host side (namespaces, veth, registry forward); the node is its child.
    return p.pid === root ? "sandbox launcher" : "machined";
  }
  if (p.comm === "ctr") return "ctr (machined's container runners)";
  if (p.comm === "containerd") return p.cmdline.includes("cri") ? "containerd (CRI)" : "containerd (system)";
  if (p.comm.startsWith("containerd-shim")) return "containerd shims";
  if (p.comm === "flanneld" || p.cmdline.includes("flanneld")) return "flannel";
  for (const name of ["etcd", "kube-apiserver", "kube-controller", "kube-scheduler", "kubelet", "kube-proxy", "coredns", "pause"]) {
    if (p.comm.startsWith(name)) return name === "kube-controller" ? "kube-controller-manager" : name;
  }
  return `other (${p.comm})`;
}

function rssByComponent(root: number): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const p of tree(root)) sums[component(p, root)] = (sums[component(p, root)] ?? 0) + p.rssKiB;
  return Object.fromEntries(Object.entries(sums).sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, Math.round(v / 102.4) / 10]));
}

function newest(root: number, name: string): Proc | undefined {
  return tree(root)
    .filter((p) => component(p, root) === name)
    .sort((a, b) => b.startMs - a.startMs)[0];
}

// ---- the run ----
const lab = await startLab("bench", "10.214.91");
const ip = lab.address(2).split("/")[0];
// The profiler's folder is one path for both sides: the launcher on the host writes its profile under the host's
// /var/lib, the node inside under its own /var (the state folder's var/), copied out once it has stopped.
const PROFILE_PATH = "/var/lib/machined-cpu-prof";
if (profileDir) mkdirSync(profileDir, { recursive: true });
const node = await startSandbox(lab, "bench-cp", 2, { logLevel: "warn", nodeArgs: profileDir ? ["--cpu-prof", `--cpu-prof-dir=${PROFILE_PATH}`] : undefined }).catch(async (err) => {
  await lab.stop();
  throw err;
});
const figures: Record<string, number> = {};
const memory: Record<string, Record<string, number>> = {};
let cpu: Record<string, number> = {};
let restWindowUs: [number, number] | undefined;
let admin: TestClient | undefined;
try {
  const root = node.pid;
  const cfgs = await generateConfigs({ clusterName: "bench", endpoint: `https://${ip}:6443`, installDisk: "/dev/vda", talosVersion: "v1.13", kubernetesVersion: VERSION });
  const config = applyPatches(cfgs.controlplane, [
    parsePatch(mirrorsPatch(lab.gateway)),
    parsePatch("machine:\n  network:\n    hostname: bench-cp\ncluster:\n  allowSchedulingOnControlPlanes: true\n"),
  ]);
  await new Promise((r) => setTimeout(r, 5000)); // let start-up settle before the maintenance-mode sample
  memory["maintenance mode"] = rssByComponent(root);

  const insecure = new TestClient(`${ip}:50000`, insecureTls());
  try {
    await insecure.unary(MachineService, "ApplyConfiguration", m.ApplyConfigurationRequestSchema, m.ApplyConfigurationResponseSchema, { data: new TextEncoder().encode(config) }, { deadlineMs: 2 * MIN });
  } finally {
    insecure.close();
  }
  const ctx = (parse(cfgs.talosconfig) as { contexts: Record<string, { ca: string; crt: string; key: string }> }).contexts.bench;
  const d = (s: string) => Buffer.from(s, "base64").toString("utf8");
  admin = new TestClient(`${ip}:50000`, mtls(d(ctx.ca), d(ctx.crt), tlsKeyPem(d(ctx.key))));
  const a = admin;
  await until("the API with the cluster's credentials", 2 * MIN, () => a.unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {}, { deadlineMs: 10_000 }));
  await until("etcd ready for bootstrap", 5 * MIN, () => a.unary(MachineService, "Bootstrap", m.BootstrapRequestSchema, m.BootstrapResponseSchema, {}, { deadlineMs: 20_000 }));
  const t0 = Date.now();
  const since = (t: number) => Math.round((t - t0) / 100) / 10;
  const mark = (what: string, t = Date.now()) => {
    figures[what] = since(t);
    console.log(`[+${figures[what]} s] ${what}`);
  };

  const chunks: Uint8Array[] = [];
  await until("a kubeconfig", 2 * MIN, async () => {
    const r = await a.stream(MachineService, "Kubeconfig", EmptySchema, DataSchema, {}, { deadlineMs: 20_000 });
    chunks.splice(0, chunks.length, ...r.map((x) => x.bytes));
  });
  const kc = new k8s.KubeConfig();
  kc.loadFromString(untarOne(Buffer.concat(chunks), "kubeconfig"));
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const readyz = () =>
    new Promise<void>((resolve, reject) => {
      const cluster = kc.getCurrentCluster()!;
      const user = kc.getCurrentUser()!;
      const b64 = (x?: string) => (x ? Buffer.from(x, "base64") : undefined);
      const req = https.get(`${cluster.server}/readyz`, { ca: b64(cluster.caData), cert: b64(user.certData), key: b64(user.keyData), timeout: 5000 }, (res) => {
        res.resume();
        if (res.statusCode === 200) resolve();
        else reject(new Error(`readyz ${res.statusCode}`));
      });
      req.on("error", reject).on("timeout", () => req.destroy(new Error("readyz timed out")));
    });

  let etcdSeen = false;
  await until("the API server ready", 10 * MIN, async () => {
    if (!etcdSeen && newest(root, "etcd")) {
      etcdSeen = true;
      mark("etcd running");
    }
    await readyz();
  });
  mark("API server /readyz ok");
  const apiserver = newest(root, "kube-apiserver");
  if (apiserver) figures["API server process started"] = since(apiserver.startMs);

  await until("the node Ready", 15 * MIN, async () => {
    const n = await core.readNode({ name: "bench-cp" });
    if (n.status?.conditions?.find((x) => x.type === "Ready")?.status !== "True") throw new Error("not Ready");
  });
  mark("node Ready");
  const flannel = newest(root, "flannel");
  if (flannel) figures["flanneld process started"] = since(flannel.startMs);
  memory["machined after Ready"] = { machined: rssByComponent(root).machined };

  await until("every kube-system pod Running and ready", 15 * MIN, async () => {
    const pods = (await core.listNamespacedPod({ namespace: "kube-system" })).items;
    for (const prefix of ["kube-apiserver-", "kube-controller-manager-", "kube-scheduler-", "kube-proxy-", "kube-flannel-", "coredns-"]) {
      if (!pods.some((p) => p.metadata?.name?.startsWith(prefix))) throw new Error(`no ${prefix}* pod`);
    }
    for (const p of pods) {
      if (p.status?.phase !== "Running" || !p.status.containerStatuses?.every((s) => s.ready)) throw new Error(`${p.metadata?.name} not ready`);
    }
  });
  mark("kube-system pods Running");

  const lines: string[] = [];
  await a.stream(ClusterService, "HealthCheck", c.HealthCheckRequestSchema, c.HealthCheckProgressSchema, { waitTimeout: { seconds: BigInt(10 * 60), nanos: 0 } }, {
    deadlineMs: 11 * MIN,
    onMessage: (x) => lines.push(x.message),
  });
  if (lines.some((l) => /SKIP/.test(l))) throw new Error(`health skipped a check:\n${lines.join("\n")}`);
  mark("health all OK");
  await new Promise((r) => setTimeout(r, 10_000)); // components settle after start-up
  memory["after Ready (+10 s)"] = rssByComponent(root);
  console.log(`CPU at rest: ${restSeconds} s ...`);
  const restFrom = monotonicUs();
  cpu = await cpuAtRest(root, restSeconds);
  restWindowUs = [restFrom, monotonicUs()];

  if (apiserver) figures["floor: API server's own start → /readyz"] = Math.round((figures["API server /readyz ok"] - figures["API server process started"]) * 10) / 10;
  // Node Ready needs the CNI: flanneld writes its config when it starts, and the kubelet notices.
  if (flannel) figures["floor: flanneld's start → node Ready"] = Math.round((figures["node Ready"] - figures["flanneld process started"]) * 10) / 10;
  if (apiserver) figures["orchestration: bootstrap → API server process"] = figures["API server process started"];
  if (flannel) figures["orchestration: API server ready → flanneld process"] = Math.round((figures["flanneld process started"] - figures["API server /readyz ok"]) * 10) / 10;
} finally {
  admin?.close();
  await node.stop({ keepState: true });
  if (profileDir) {
    for (const from of [PROFILE_PATH, join(node.stateDir, PROFILE_PATH)]) {
      if (!existsSync(from)) continue;
      for (const f of readdirSync(from)) copyFileSync(join(from, f), join(profileDir, f));
    }
    rmSync(PROFILE_PATH, { recursive: true, force: true });
  }
  rmSync(node.stateDir, { recursive: true, force: true, maxRetries: 5 });
  rmSync(`${node.stateDir}.log`, { force: true });
  await lab.stop();
}

console.log("\nseconds since the bootstrap reply:");
for (const [k, v] of Object.entries(figures)) console.log(`  ${k.padEnd(50)} ${v.toFixed(1)}`);
for (const [when, sums] of Object.entries(memory)) {
  console.log(`\nRSS (MiB), ${when}:`);
  for (const [k, v] of Object.entries(sums)) console.log(`  ${k.padEnd(30)} ${v.toFixed(1)}`);
  if (Object.keys(sums).length > 1) console.log(`  ${"total".padEnd(30)} ${Object.values(sums).reduce((x, y) => x + y, 0).toFixed(1)}`);
}
if (Object.keys(cpu).length) {
  console.log(`\nCPU at rest (CPU-seconds per minute, ${restSeconds} s after every pod Running):`);
  for (const [k, v] of Object.entries(cpu)) console.log(`  ${k.padEnd(40)} ${v.toFixed(1)}`);
  console.log(`  ${"total".padEnd(40)} ${Object.values(cpu).reduce((x, y) => x + y, 0).toFixed(1)}`);
}
if (profileDir && restWindowUs) {
  // The node's own profile is the one with the most samples in the window (the launcher on the host side is idle).
  const sourceOf = bundleSources();
  const profiles = readdirSync(profileDir)
    .filter((f) => f.endsWith(".cpuprofile"))
    .map((f) => ({ f, r: selfTime(JSON.parse(readFileSync(join(profileDir, f), "utf8")) as CpuProfile, restWindowUs![0], restWindowUs![1], sourceOf) }))
    .sort((a, b) => b.r.total - a.r.total);
  for (const { f, r } of profiles.slice(0, 2)) {
    console.log(`\n${f}: ${(r.total / 1000).toFixed(1)} CPU-s sampled in the rest window; self time by source file (ms):`);
    for (const [k, v] of r.files) console.log(`  ${v.toFixed(0).padStart(7)}  ${k}`);
    console.log("  by function (ms):");
    for (const [k, v] of r.functions) console.log(`  ${v.toFixed(0).padStart(7)}  ${k}`);
  }
}
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ kubernetes: VERSION, seconds: figures, rssMiB: memory, cpuSecondsPerMinuteAtRest: cpu }, null, 2));
