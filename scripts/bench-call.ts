/**
 * `npx tsx scripts/bench-call.ts [--calls N] [--reps R]`: server CPU per Version call of machined's API
 * transport against its floor, bare @grpc/grpc-js servers with the same certificates (the OS CA, an
 * Ed25519 server certificate, the admin client certificate) answering the same request with the same
 * reply: one inside the machined process (same heap and event loop, so only the transport differs), and
 * one in its own process, with the reply made per call or once. Every server process reports its own CPU
 * time (process.cpuUsage) around each run, with its idle CPU netted out; the client here keeps one HTTP/2
 * connection per server (as talosctl does) with 1 or 32 calls in flight. Runs alternate between the
 * servers so that load from elsewhere hits all alike; the figure is the median of the repetitions.
 * Figures only, no assertions.
 */
import "reflect-metadata";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { MachineService, VersionResponseSchema } from "../src/machinery/api/gen/machine/machine_pb.js";

const SELF = fileURLToPath(import.meta.url);
const VERSION = "/machine.MachineService/Version";

interface BareSetup {
  ca: string;
  crt: string;
  key: string;
  /** machined's own Version reply, so both servers encode the same message. */
  reply: string;
}

/** Child side: serve, report the port, answer CPU queries. */
async function serve(kind: string): Promise<void> {
  process.on("message", (m: { cmd: string; setup?: BareSetup }) => {
    if (m.cmd === "cpu") {
      const u = process.cpuUsage();
      process.send?.({ cpuUs: u.user + u.system });
    } else if (m.cmd === "bare" && m.setup) {
      // A bare server inside this process too: same heap, same event loop, only the transport differs.
      void startBare(m.setup, true).then((port) => process.send?.({ barePort: port }));
    }
  });
  if (kind === "machined") {
    const { runLocalNode } = await import("../src/pid1/local.js");
    const stateDir = mkdtempSync(path.join(tmpdir(), "bench-call-"));
    const n = await runLocalNode({ stateDir, listen: { host: "127.0.0.1", port: 0 }, logLevel: "silent", services: false }, false);
    process.on("disconnect", () => void n.stop().finally(() => (rmSync(stateDir, { recursive: true, force: true }), process.exit(0))));
    process.send?.({ port: n.port });
    return;
  }
  const port = await startBare(JSON.parse(process.env.BENCH_BARE ?? "{}") as BareSetup, kind === "bare-per-call");
  process.send?.({ port });
}

/**
 * A bare grpc-js server answering Version. perCall: the reply is made from a plain object on every call,
 * as a protobuf-es handler does; otherwise the same message object every time (the floor of the floor).
 */
async function startBare(setup: BareSetup, perCall: boolean): Promise<number> {
  const reply = fromBinary(VersionResponseSchema, Buffer.from(setup.reply, "base64"));
  const init = plain(reply) as MessageInitShape<typeof VersionResponseSchema>;
  const answer = perCall ? () => create(VersionResponseSchema, init) : () => reply;
  const server = new grpc.Server({ "grpc.max_receive_message_length": 32 * 1024 * 1024 });
  server.addService(
    {
      Version: {
        path: VERSION,
        requestStream: false,
        responseStream: false,
        requestSerialize: (x: unknown) => x as Buffer,
        requestDeserialize: (b: Buffer) => fromBinary(EmptySchema, b),
        responseSerialize: (x: typeof reply) => Buffer.from(toBinary(VersionResponseSchema, x)),
        responseDeserialize: (b: Buffer) => b,
      },
    } as grpc.ServiceDefinition,
    { Version: (_call: unknown, cb: grpc.sendUnaryData<typeof reply>) => cb(null, answer()) },
  );
  const creds = grpc.ServerCredentials.createSsl(Buffer.from(setup.ca), [{ private_key: Buffer.from(setup.key), cert_chain: Buffer.from(setup.crt) }], true);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync("127.0.0.1:0", creds, (err, p) => (err ? reject(err) : resolve(p))));
  process.on("disconnect", () => server.forceShutdown());
  return port;
}

/** A message as the plain object a handler would write (no $typeName anywhere). */
function plain(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === "object" && !(v instanceof Uint8Array)) {
    return Object.fromEntries(Object.entries(v).filter(([k]) => k !== "$typeName").map(([k, x]) => [k, plain(x)]));
  }
  return v;
}

interface Child {
  proc: ChildProcess;
  port: number;
  cpu(): Promise<number>;
  /** Start a bare per-call server inside this child (the machined one). */
  startBare(setup: BareSetup): Promise<number>;
}

function startChild(kind: string, env: Record<string, string> = {}): Promise<Child> {
  const proc = spawn(process.execPath, [...(process.env.BENCH_NODE_FLAGS?.split(" ").filter(Boolean) ?? []), "--import", "tsx", SELF, "--serve", kind], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    env: { ...process.env, NODE_NO_WARNINGS: "1", ...env },
  });
  const waiting: ((n: number) => void)[] = [];
  const barePorts: ((n: number) => void)[] = [];
  return new Promise((resolve, reject) => {
    proc.once("exit", (c) => reject(new Error(`${kind} server exited (${c})`)));
    proc.on("message", (m: { port?: number; cpuUs?: number; barePort?: number }) => {
      if (m.barePort !== undefined) barePorts.shift()?.(m.barePort);
      if (m.port !== undefined) {
        resolve({
          proc,
          port: m.port,
          cpu: () =>
            new Promise<number>((r) => {
              waiting.push(r);
              proc.send({ cmd: "cpu" });
            }),
          startBare: (setup: BareSetup) =>
            new Promise<number>((r) => {
              barePorts.push(r);
              proc.send({ cmd: "bare", setup });
            }),
        });
      } else if (m.cpuUs !== undefined) waiting.shift()?.(m.cpuUs);
    });
  });
}

/** Exactly `n` calls with `inFlight` outstanding at any time. */
async function run(call: () => Promise<unknown>, n: number, inFlight: number): Promise<void> {
  let started = 0;
  const worker = async () => {
    while (started < n) {
      started++;
      await call();
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const opt = (name: string, d: number) => {
    const i = args.indexOf(name);
    return i >= 0 ? Number(args[i + 1]) : d;
  };
  const calls = opt("--calls", 3000);
  const reps = opt("--reps", 3);

  const { generateConfigs } = await import("../src/machinery/generate/index.js");
  const { issueServerCert } = await import("../src/machinery/pki/issue.js");
  const { tlsKeyPem } = await import("../src/machinery/pki/pem.js");
  const { TestClient, insecureTls, mtls } = await import("../test/helpers/client.js");
  const { apply, talosconfigCreds, eventually } = await import("../test/api/harness.js");

  const cfgs = await generateConfigs({ clusterName: "bench", endpoint: "https://127.0.0.1:6443", talosVersion: "v1.13" });
  const admin = talosconfigCreds(cfgs.talosconfig);
  const machined = await startChild("machined");
  const insecure = new TestClient(`127.0.0.1:${machined.port}`, insecureTls());
  await apply(insecure, cfgs.controlplane);
  insecure.close();
  const mc = new TestClient(`127.0.0.1:${machined.port}`, mtls(admin.ca, admin.crt, admin.key));
  const version = (c: InstanceType<typeof TestClient>) => c.unary(MachineService, "Version", EmptySchema, VersionResponseSchema, {});
  const reply = await eventually(() => version(mc), 10_000);

  const serverCert = await issueServerCert({ crt: cfgs.secrets.certs.os.crt, key: cfgs.secrets.certs.os.key }, { ipSANs: ["127.0.0.1"] });
  const setup: BareSetup = {
    ca: cfgs.secrets.certs.os.crt,
    crt: serverCert.crt,
    key: tlsKeyPem(serverCert.key),
    reply: Buffer.from(toBinary(VersionResponseSchema, reply)).toString("base64"),
  };
  const creds = () => mtls(admin.ca, admin.crt, admin.key);
  const servers = [{ name: "machined", child: machined, client: mc }];
  const inNode = await machined.startBare(setup);
  servers.push({ name: "bare-in-node", child: machined, client: new TestClient(`127.0.0.1:${inNode}`, creds()) });
  for (const kind of ["bare-per-call", "bare-prebuilt"]) {
    const child = await startChild(kind, { BENCH_BARE: JSON.stringify(setup) });
    servers.push({ name: kind, child, client: new TestClient(`127.0.0.1:${child.port}`, creds()) });
  }
  for (const s of servers) await run(() => version(s.client), 500, 8); // warm all: JIT, TLS, buffers
  // What each server spends with no calls at all (timers, controllers), per second, to net it out below.
  // The least of three one-second samples: one may catch a late GC or compilation.
  const idle: Record<string, number> = {};
  for (const s of servers) {
    const samples: number[] = [];
    for (let i = 0; i < 3; i++) {
      const c0 = await s.child.cpu();
      await new Promise((r) => setTimeout(r, 1000));
      samples.push((await s.child.cpu()) - c0);
    }
    idle[s.name] = Math.min(...samples);
  }
  console.log(`idle CPU, µs per second: ${servers.map((s) => `${s.name} ${idle[s.name].toFixed(0)}`).join(", ")}`);

  console.log(`server CPU per Version call, µs, idle CPU netted out (median of ${reps} runs of ${calls} calls; one mTLS connection per server)`);
  console.log("  bare-in-node: a bare grpc-js server inside the machined process (same heap and event loop): the transport-only floor");
  console.log("  bare-per-call / bare-prebuilt: a bare grpc-js server in its own process, reply made per call / made once");
  console.log("in flight   machined   bare-in-node   bare-per-call   bare-prebuilt   ratio to in-node   to per-call   to prebuilt   machined calls/s");
  for (const inFlight of [1, 32]) {
    const cpu: Record<string, number[]> = {};
    const rate: Record<string, number[]> = {};
    for (let r = 0; r < reps; r++) {
      for (const s of r % 2 === 0 ? servers : [...servers].reverse()) {
        const c0 = await s.child.cpu();
        const t0 = performance.now();
        await run(() => version(s.client), calls, inFlight);
        const wall = performance.now() - t0;
        const c1 = await s.child.cpu();
        (cpu[s.name] ??= []).push((c1 - c0 - (idle[s.name] * wall) / 1000) / calls);
        (rate[s.name] ??= []).push(calls / (wall / 1000));
      }
    }
    const [a, n, b, p] = ["machined", "bare-in-node", "bare-per-call", "bare-prebuilt"].map((k) => median(cpu[k]));
    console.log(
      `${String(inFlight).padStart(9)}   ${a.toFixed(1).padStart(8)}   ${n.toFixed(1).padStart(12)}   ${b.toFixed(1).padStart(13)}   ${p.toFixed(1).padStart(13)}   ` +
        `${(a / n).toFixed(2).padStart(16)}   ${(a / b).toFixed(2).padStart(11)}   ${(a / p).toFixed(2).padStart(11)}   ${median(rate.machined).toFixed(0).padStart(16)}`,
    );
  }
  for (const s of servers) s.client.close();
  for (const c of new Set(servers.map((s) => s.child))) c.proc.disconnect();
}

if (process.argv[2] === "--serve") await serve(process.argv[3]);
else {
  await main();
  process.exit(0);
}
