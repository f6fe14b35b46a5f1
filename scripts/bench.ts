/**
 * `npm run bench`: figures, not assertions. Starts the bundled agent (dist/machined.mjs) as a real
 * process and measures start-up, Version latency/throughput over mTLS and memory. Run `npm run build` first.
 */
import "reflect-metadata";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createServer } from "node:net";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { MachineService } from "../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../src/machinery/api/gen/machine/machine_pb.js";
import { generateConfigs } from "../src/machinery/generate/index.js";
import { TestClient, insecureTls, mtls } from "../test/helpers/client.js";
import { talosconfigCreds } from "../test/api/harness.js";

const BUNDLE = path.resolve("dist/machined.mjs");
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const median = (xs: number[]) => pct(xs, 50);

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

async function startAgent(stateDir: string, port: number): Promise<{ child: ChildProcess; ms: number }> {
  const t0 = performance.now();
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
  return { child, ms: performance.now() - t0 };
}

const rssMiB = (pid: number) => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))!;
  return Number(line.split(/\s+/)[1]) / 1024;
};

async function load(c: TestClient, concurrency: number, seconds: number): Promise<{ calls: number; lat: number[] }> {
  const lat: number[] = [];
  const until = performance.now() + seconds * 1000;
  const worker = async () => {
    while (performance.now() < until) {
      const t = performance.now();
      await c.unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {});
      lat.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { calls: lat.length, lat };
}

async function main() {
  if (!existsSync(BUNDLE)) throw new Error("dist/machined.mjs is missing: run `npm run build` first");
  const starts: number[] = [];
  for (let i = 0; i < 5; i++) {
    const dir = mkdtempSync(path.join(tmpdir(), "machined-bench-"));
    const { child, ms } = await startAgent(dir, await freePort());
    starts.push(ms);
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`start → listening (maintenance): median ${median(starts).toFixed(0)} ms over ${starts.length} runs [${starts.map((s) => s.toFixed(0)).join(", ")}]`);

  const dir = mkdtempSync(path.join(tmpdir(), "machined-bench-"));
  const port = await freePort();
  const { child } = await startAgent(dir, port);
  const cfgs = await generateConfigs({ clusterName: "bench", endpoint: "https://127.0.0.1:6443", talosVersion: "v1.13" });
  const insecure = new TestClient(`127.0.0.1:${port}`, insecureTls());
  await insecure.unary(MachineService, "ApplyConfiguration", m.ApplyConfigurationRequestSchema, m.ApplyConfigurationResponseSchema, {
    data: new TextEncoder().encode(cfgs.controlplane),
    mode: m.ApplyConfigurationRequest_Mode.AUTO,
  });
  insecure.close();
  const creds = talosconfigCreds(cfgs.talosconfig);
  const c = new TestClient(`127.0.0.1:${port}`, mtls(creds.ca, creds.crt, creds.key));
  for (let i = 0; ; i++) {
    try {
      await c.unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {});
      break;
    } catch (err) {
      if (i > 50) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await new Promise((r) => setTimeout(r, 1000));
  console.log(`RSS idle (configured, mTLS): ${rssMiB(child.pid!).toFixed(1)} MiB`);
  for (const conc of [1, 32]) {
    await load(c, conc, 1); // warm-up
    const r = await load(c, conc, 5);
    console.log(
      `Version over mTLS, concurrency ${conc}: ${(r.calls / 5).toFixed(0)} calls/s, p50 ${median(r.lat).toFixed(2)} ms, p99 ${pct(r.lat, 99).toFixed(2)} ms; RSS after ${rssMiB(child.pid!).toFixed(1)} MiB`,
    );
  }
  c.close();
  child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
  console.log("(one shared HTTP/2 connection, client and server on the same 2-core machine)");
  await benchResources();
  await benchServices();
}

/** Issue 4 figures: List of every published type, and watch fan-out to 100 watchers. */
async function benchResources() {
  const { startNode, clusterConfigs, insecureClient, mtlsClient, talosconfigCreds, apply, eventually, version } = await import("../test/api/harness.js");
  const { State } = await import("../src/machinery/api/gen/cosi/state_pb.js");
  const s = await import("../src/machinery/api/gen/cosi/state_pb.js");
  const { ResourceDefinitionSpecSchema } = await import("../src/machinery/api/gen/cosi/meta_pb.js");
  const { fromBinary } = await import("@bufbuild/protobuf");
  const h = await startNode();
  const cfgs = await clusterConfigs();
  const ic = insecureClient(h);
  await apply(ic, cfgs.controlplane);
  ic.close();
  const c = mtlsClient(h, talosconfigCreds(cfgs.talosconfig));
  await eventually(() => version(c));
  await new Promise((r) => setTimeout(r, 3000)); // let the controllers converge
  const listAll = async () => {
    const rds = await c.stream(State, "List", s.ListRequestSchema, s.ListResponseSchema, { namespace: "meta", type: "ResourceDefinitions.meta.cosi.dev" });
    let n = 0;
    for (const rd of rds) {
      const spec = fromBinary(ResourceDefinitionSpecSchema, rd.resource!.spec!.protoSpec);
      const items = await c.stream(State, "List", s.ListRequestSchema, s.ListResponseSchema, { namespace: spec.defaultNamespace, type: spec.resourceType });
      n += items.length;
    }
    return { types: rds.length, resources: n };
  };
  await listAll();
  const times: number[] = [];
  let counted = { types: 0, resources: 0 };
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    counted = await listAll();
    times.push(performance.now() - t);
  }
  console.log(`List of all resources (${counted.types} types, ${counted.resources} resources, one List per type): median ${median(times).toFixed(1)} ms`);

  const watchers = 100;
  const ptr = { namespace: "runtime", type: "MachineStatuses.runtime.talos.dev", id: "machine" };
  let target = 0;
  let notified = 0;
  let lastAt = 0;
  const calls = Array.from({ length: watchers }, () => {
    let first = true;
    return c
      .stream(State, "Watch", s.WatchRequestSchema, s.WatchResponseSchema, { ...ptr, apiVersion: 1 }, {
        deadlineMs: 20_000,
        onMessage: (m) => {
          if (m.event.length === 0) return;
          if (first) {
            first = false;
            target++;
            return;
          }
          notified++;
          lastAt = performance.now();
        },
      })
      .catch(() => undefined);
  });
  while (target < watchers) await new Promise((r) => setTimeout(r, 10));
  const t0 = performance.now();
  h.node.node.setCondition("bench", "fan-out probe");
  while (notified < watchers) await new Promise((r) => setTimeout(r, 1));
  console.log(`Watch fan-out: ${watchers} watchers on MachineStatus, change → last watcher notified: ${(lastAt - t0).toFixed(1)} ms`);
  c.raw.close();
  await Promise.allSettled(calls);
  await h.stop();
}

/** Issue 3 figures: agent RSS with containerd + etcd running, Bootstrap → etcd healthy. */
async function benchServices() {
  const { execFileSync } = await import("node:child_process");
  const have = (b: string) => {
    try {
      execFileSync("which", [b], { stdio: "ignore" });
      return true;
    } catch {
      return false;
    }
  };
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
  const dir = mkdtempSync(path.join(tmpdir(), "machined-bench-svc-"));
  const port = await freePort();
  const child = spawn(process.execPath, [BUNDLE, "start", "--state-dir", dir, "--listen", `127.0.0.1:${port}`, "--services", "on"], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, NODE_NO_WARNINGS: "1" },
  });
  try {
    await new Promise<void>((resolve) => child.stdout!.on("data", (b: Buffer) => b.toString().includes("machined API listening") && resolve()));
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
    for (let i = 0; i < 300 && (await etcdState().catch(() => undefined))?.state !== "Waiting"; i++) await new Promise((r) => setTimeout(r, 100));
    const t0 = performance.now();
    await c.unary(MachineService, "Bootstrap", m.BootstrapRequestSchema, m.BootstrapResponseSchema, {});
    for (let i = 0; i < 600; i++) {
      const e = await etcdState();
      if (e?.state === "Running" && e.health?.healthy) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    console.log(`Bootstrap → etcd healthy: ${((performance.now() - t0) / 1000).toFixed(2)} s`);
    await new Promise((r) => setTimeout(r, 2000));
    console.log(`agent RSS with containerd + etcd running: ${rssMiB(child.pid!).toFixed(1)} MiB`);
    c.close();
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
