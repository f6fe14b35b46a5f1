/**
 * Transport fuzz suite: a real node in a child process (so its descriptors and memory are its own) under
 * seeded hostile input, phase by phase: connections reset at every point of the handshake and the HTTP/2
 * preface, garbage, malformed HTTP/2 and gRPC frames, thousands of streams, oversized and lying messages,
 * idle and slow connections, the connection cap, and the same churn over mutual TLS.
 *
 * After every phase the node must still be alive, answer Version within a second, hold no call, request
 * byte or socket of the phase, and be back to its descriptor count (± a few). Its event loop must never have
 * stalled a second. The figures (connections churned, descriptors and RSS before/after, largest stall) are
 * printed at the end.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import * as http2 from "node:http2";
import * as net from "node:net";
import * as tls from "node:tls";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { status } from "@grpc/grpc-js";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { MachineService } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { TestClient, insecureTls, mtls } from "../helpers/client.js";
import { apply, clusterConfigs, eventually, talosconfigCreds, type Creds } from "./harness.js";
import {
  Flag,
  FrameType,
  PREFACE,
  VERSION_PATH,
  closedWithin,
  frame,
  frameReader,
  grpcMessage,
  grpcRequestHeaders,
  captureClientHello,
  hpack,
  pool,
  prng,
  settings,
  sleep,
  tlsConnect,
  type Prng,
} from "./wire.js";

const SEED = 0x13f00d;
const MiB = 1024 * 1024;

/** Small caps and short timeouts, so each bound is reached in seconds. Message and memory budgets stay the real ones. */
const LIMITS = {
  maxConnections: 64,
  handshakeTimeoutMs: 1000,
  idleTimeoutMs: 1500,
  closeGraceMs: 500,
  refuseGraceMs: 300,
  messageStallMs: 1000,
  maxCalls: 600,
};
const FD_SLACK = 4;

interface Stats {
  fds: number;
  rss: number;
  heapUsed: number;
  openSockets: number;
  conns: number;
  calls: number;
  inflightBytes: number;
  loopMaxMs: number;
}

let child: ChildProcess;
let port = 0;
let base: Stats;
let creds: Creds | undefined;
const figures = { churned: 0, phases: [] as { phase: string; fds: number; rss: number; loopMaxMs: number; probeMs: number }[], peakRss: 0 };

const stats = () => node.ask<Stats>("stats");

let maxLoop = 0;
async function sample(): Promise<Stats> {
  const s = await stats();
  maxLoop = Math.max(maxLoop, s.loopMaxMs);
  figures.peakRss = Math.max(figures.peakRss, s.rss);
  return s;
}

/** Wait until the node holds nothing of the phase: no socket beyond `open`, no call, no reserved byte. */
async function settle(open = 0): Promise<Stats> {
  const until = Date.now() + 10_000;
  for (;;) {
    const s = await sample();
    if (s.openSockets <= open && s.conns <= open && s.calls === 0 && s.inflightBytes === 0) return s;
    if (Date.now() > until) throw new Error(`node did not release the phase's resources: ${JSON.stringify(s)}`);
    await sleep(100);
  }
}

function client(): TestClient {
  const address = `127.0.0.1:${port}`;
  return creds ? new TestClient(address, mtls(creds.ca, creds.crt, creds.key)) : new TestClient(address, insecureTls());
}

/** Version from a fresh connection, within a second. Returns the latency. */
async function probe(): Promise<number> {
  const c = client();
  const t0 = performance.now();
  try {
    const v = await c.unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {}, { deadlineMs: 1000 });
    expect(v.messages[0].version?.tag).toBeTruthy();
    return performance.now() - t0;
  } finally {
    c.close();
  }
}

/** The invariants after a phase. */
async function afterPhase(phase: string): Promise<void> {
  expect(child.exitCode, `node exited during ${phase}`).toBeNull();
  await settle();
  const probeMs = await probe();
  const s = await settle();
  figures.phases.push({ phase, fds: s.fds, rss: s.rss, loopMaxMs: maxLoop, probeMs: Math.round(probeMs) });
  expect(s.fds, `descriptors after ${phase}`).toBeLessThanOrEqual(base.fds + FD_SLACK);
  expect(maxLoop, `event loop stall during ${phase}`).toBeLessThan(1000);
  maxLoop = 0;
}

const FIXTURE = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures", "transport-node.ts");

/** The fixture node in a child process; `nofile` caps its descriptors (RLIMIT_NOFILE). */
async function startNodeProcess(limits: object, nofile?: number) {
  const argv = ["--expose-gc", "--import", "tsx", FIXTURE];
  const proc = nofile
    ? spawn("/bin/sh", ["-c", `ulimit -n ${nofile} && exec "$0" "$@"`, process.execPath, ...argv], { stdio: ["ignore", "inherit", "inherit", "ipc"], env: { ...process.env, TRANSPORT_LIMITS: JSON.stringify(limits) } })
    : spawn(process.execPath, argv, { stdio: ["ignore", "inherit", "inherit", "ipc"], env: { ...process.env, TRANSPORT_LIMITS: JSON.stringify(limits) } });
  const waiting: { resolve: (m: unknown) => void; reject: (e: Error) => void }[] = [];
  proc.once("exit", (code, signal) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`transport node exited (${code ?? signal})`));
  });
  const p = await new Promise<number>((resolve, reject) => {
    proc.once("exit", (code) => reject(new Error(`transport node exited with ${code}`)));
    proc.on("message", (msg: { port?: number }) => {
      if (msg.port !== undefined) resolve(msg.port);
      else waiting.shift()?.resolve(msg);
    });
  });
  return {
    proc,
    port: p,
    ask<T>(cmd: string): Promise<T> {
      if (proc.exitCode !== null || proc.signalCode !== null) return Promise.reject(new Error("transport node is not running"));
      return new Promise((resolve, reject) => {
        waiting.push({ resolve: resolve as (m: unknown) => void, reject });
        proc.send({ cmd });
      });
    },
    async stop() {
      if (proc.exitCode !== null) return;
      const gone = new Promise((r) => proc.once("exit", r));
      proc.disconnect();
      await Promise.race([gone, sleep(5000)]);
      if (proc.exitCode === null) proc.kill("SIGKILL");
    },
  };
}
let node: Awaited<ReturnType<typeof startNodeProcess>>;

beforeAll(async () => {
  node = await startNodeProcess(LIMITS);
  child = node.proc;
  port = node.port;
  await probe(); // warm: first-call allocations are not a leak
  base = await settle();
}, 60_000);

afterAll(async () => {
  await node?.stop();
  // The closing figures for the issue: what was churned, and where descriptors, memory and stalls ended up.
  console.log(
    `transport fuzz (seed ${SEED.toString(16)}): ${figures.churned} connections churned; descriptors ${base?.fds} before; ` +
      `RSS ${(base?.rss / MiB).toFixed(0)} MiB before, peak ${(figures.peakRss / MiB).toFixed(0)} MiB\n` +
      figures.phases
        .map((p) => `  ${p.phase.padEnd(22)} fds ${p.fds}  rss ${(p.rss / MiB).toFixed(0)} MiB  max loop stall ${p.loopMaxMs.toFixed(0)} ms  Version ${p.probeMs} ms`)
        .join("\n"),
  );
});

type ChurnKind = "tcp-reset" | "early-reset" | "handshake-reset" | "handshake-fin" | "handshake-notify" | "preface-reset" | "preface-fin" | "call-reset";
const CHURN_KINDS: ChurnKind[] = ["tcp-reset", "early-reset", "handshake-reset", "handshake-fin", "handshake-notify", "preface-reset", "preface-fin", "call-reset"];

const callFrames = () =>
  Buffer.concat([
    PREFACE,
    settings(),
    frame(FrameType.HEADERS, Flag.END_HEADERS, 1, grpcRequestHeaders(VERSION_PATH)),
    frame(FrameType.DATA, Flag.END_STREAM, 1, grpcMessage(Buffer.alloc(0))),
  ]);

/** One connection that ends abruptly; resolves false if it was still open after 3 s (the node kept it). */
async function churnOne(kind: ChurnKind, rng: Prng, tlsOpts: tls.ConnectionOptions = {}): Promise<boolean> {
  figures.churned++;
  if (kind === "tcp-reset" || kind === "early-reset") {
    const raw = net.connect({ port, host: "127.0.0.1" });
    raw.on("error", () => {});
    await new Promise((r) => {
      raw.once("connect", r);
      raw.once("close", r);
    });
    if (kind === "tcp-reset") raw.resetAndDestroy();
    else {
      const t = tls.connect({ socket: raw, rejectUnauthorized: false, ALPNProtocols: ["h2"], ...tlsOpts });
      t.on("error", () => {});
      setTimeout(() => raw.resetAndDestroy(), rng.int(0, 2));
    }
    return closedWithin(raw, 3000);
  }
  const c = await tlsConnect(port, tlsOpts);
  if (!c) return true;
  c.tls.on("data", () => {});
  switch (kind) {
    case "handshake-reset":
      c.raw.resetAndDestroy();
      break;
    case "handshake-fin":
      c.raw.end();
      break;
    case "handshake-notify":
      c.tls.end();
      break;
    case "preface-reset":
      c.tls.write(Buffer.concat([PREFACE, settings()]));
      c.raw.resetAndDestroy();
      break;
    case "preface-fin":
      c.tls.write(Buffer.concat([PREFACE, settings()]));
      c.raw.end();
      break;
    case "call-reset":
      c.tls.write(callFrames());
      await sleep(rng.int(0, 3));
      c.raw.resetAndDestroy();
      break;
  }
  return closedWithin(c.raw, 3000);
}

describe("transport fuzz", () => {
  it("churns 2,000 connections reset or closed right after the handshake or the preface; descriptors stay flat", async () => {
    const rng = prng(SEED);
    let kept = 0;
    await pool(2000, 32, async () => {
      if (!(await churnOne(rng.pick(CHURN_KINDS), rng))) kept++;
    });
    expect(kept, "connections the node kept open after the client closed").toBe(0);
    await afterPhase("reset churn");
  }, 120_000);

  it("survives garbage before TLS, after TLS and after the HTTP/2 preface", async () => {
    const rng = prng(SEED + 1);
    let kept = 0;
    await pool(200, 32, async () => {
      figures.churned++;
      const raw = net.connect({ port, host: "127.0.0.1" });
      raw.on("error", () => {});
      raw.on("data", () => {});
      raw.write(rng.bytes(rng.int(1, 3000)));
      if (!(await closedWithin(raw, 3000))) kept++;
    });
    await pool(200, 32, async () => {
      figures.churned++;
      const c = await tlsConnect(port);
      if (!c) return;
      c.tls.on("data", () => {});
      c.tls.write(rng.bytes(rng.int(1, 3000)));
      if (!(await closedWithin(c.raw, 3000))) kept++;
    });
    // Random frames: any type, flags and stream, and sometimes a length that promises more than is sent.
    await pool(300, 32, async () => {
      figures.churned++;
      const c = await tlsConnect(port);
      if (!c) return;
      c.tls.on("data", () => {});
      const frames = [PREFACE, settings()];
      for (let i = rng.int(1, 6); i > 0; i--) {
        const f = frame(rng.int(0, 12), rng.int(0, 255), rng.pick([0, 1, 2, 3, 0x7fffffff]), rng.bytes(rng.int(0, 64)));
        if (rng.next() < 0.2) f.writeUIntBE(rng.int(65, 0xffffff), 0, 3);
        frames.push(f);
      }
      c.tls.write(Buffer.concat(frames));
      // The node may rightly wait for the rest of a frame; we then close, and it must let go.
      if (!(await closedWithin(c.raw, 500))) c.raw.destroy();
    });
    expect(kept, "garbage connections the node kept open").toBe(0);
    await afterPhase("garbage");
  }, 120_000);

  it("answers every malformed gRPC request with a status or a reset, within a second", async () => {
    const rng = prng(SEED + 2);
    const cases: { name: string; frames: Buffer[] }[] = [
      { name: "prefix longer than the body", frames: [grpcMessage(Buffer.from([1, 2, 3]), 10)] },
      { name: "truncated prefix", frames: [Buffer.from([0, 0])] },
      { name: "compressed flag, no encoding", frames: [grpcMessage(rng.bytes(20), 20, true)] },
      { name: "invalid protobuf", frames: [grpcMessage(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))] },
      { name: "two messages for a unary call", frames: [grpcMessage(Buffer.alloc(0)), grpcMessage(Buffer.alloc(0))] },
      { name: "no message", frames: [] },
      ...Array.from({ length: 60 }, (_, i) => ({ name: `random body ${i}`, frames: [grpcMessage(rng.bytes(rng.int(0, 200)), rng.next() < 0.3 ? rng.int(0, 400) : undefined)] })),
    ];
    const headerCases: { name: string; block: Buffer }[] = [
      { name: "unknown method", block: grpcRequestHeaders("/machine.MachineService/NoSuchMethod") },
      {
        name: "wrong content-type",
        block: hpack([
          [":method", "POST"],
          [":scheme", "https"],
          [":path", VERSION_PATH],
          [":authority", "127.0.0.1"],
          ["content-type", "text/plain"],
        ]),
      },
      { name: "garbage header block", block: rng.bytes(40) },
    ];
    const run = async (name: string, block: Buffer, body: Buffer[]) => {
      figures.churned++;
      const c = await tlsConnect(port);
      expect(c, name).toBeDefined();
      const r = frameReader(c!.tls);
      const data = Buffer.concat(body);
      c!.tls.write(
        Buffer.concat([
          PREFACE,
          settings(),
          frame(FrameType.HEADERS, Flag.END_HEADERS | (body.length ? 0 : Flag.END_STREAM), 1, block),
          ...(body.length ? [frame(FrameType.DATA, Flag.END_STREAM, 1, data)] : []),
        ]),
      );
      const answer = await r.wait((f) => (f.streamId === 1 && (f.type === FrameType.HEADERS || f.type === FrameType.RST_STREAM)) || f.type === FrameType.GOAWAY, 1000);
      expect(answer ?? (r.closed ? "closed" : undefined), `no answer within 1 s: ${name}`).toBeDefined();
      c!.raw.destroy();
    };
    for (const k of cases) await run(k.name, grpcRequestHeaders(VERSION_PATH), k.frames);
    for (const k of headerCases) await run(k.name, k.block, [grpcMessage(Buffer.alloc(0))]);
    await afterPhase("malformed gRPC");
  }, 120_000);

  it("caps streams per connection and calls in total", async () => {
    const block = grpcRequestHeaders(VERSION_PATH);
    const open = async (streams: number) => {
      const c = await tlsConnect(port);
      expect(c).toBeDefined();
      const r = frameReader(c!.tls);
      c!.tls.write(Buffer.concat([PREFACE, settings()]));
      await r.wait((f) => f.type === FrameType.SETTINGS && !(f.flags & Flag.ACK), 1000);
      c!.tls.write(settings(true));
      const frames: Buffer[] = [];
      // HEADERS without END_STREAM: each call waits for a body that never comes.
      for (let i = 0; i < streams; i++) frames.push(frame(FrameType.HEADERS, Flag.END_HEADERS, 1 + 2 * i, block));
      c!.tls.write(Buffer.concat(frames));
      return { c: c!, r };
    };
    // More streams at once than the 100 allowed: Node resets the connection outright.
    for (const n of [101, 1000]) {
      const flood = await open(n);
      expect(await closedWithin(flood.c.raw, 2000), `connection opening ${n} streams`).toBe(true);
    }
    // 100 streams: all become calls, held until their bodies come.
    const one = await open(100);
    await sleep(300);
    let s = await sample();
    expect(s.calls, "calls held by one connection").toBe(100);
    const heapBefore = s.heapUsed;
    const many = [one];
    for (let i = 0; i < 9; i++) many.push(await open(100));
    await sleep(500);
    s = await sample();
    expect(s.heapUsed - heapBefore, "heap held by the open calls").toBeLessThan(64 * MiB);
    // Ten connections of 100 streams: the calls over the node's cap
    // were answered at once (a trailers-only status, HEADERS with END_STREAM) instead of being held.
    expect(s.calls).toBe(LIMITS.maxCalls);
    const answered = many.flatMap((x) => x.r.frames).filter((f) => f.type === FrameType.HEADERS && f.flags & Flag.END_STREAM);
    expect(answered.length).toBeGreaterThanOrEqual(10 * 100 - LIMITS.maxCalls);
    figures.churned += many.length + 2;
    for (const x of many) x.c.raw.destroy();
    await afterPhase("many streams");
  }, 120_000);

  it("refuses oversized messages from the length prefix, and bounds request bytes per connection and in total", async () => {
    const connect = () =>
      new Promise<http2.ClientHttp2Session>((resolve, reject) => {
        const s = http2.connect(`https://127.0.0.1:${port}`, { rejectUnauthorized: false });
        s.once("connect", () => resolve(s));
        s.once("error", reject);
      });
    const request = (s: http2.ClientHttp2Session, announce: number, send: number) => {
      const req = s.request({ ":method": "POST", ":path": VERSION_PATH, "content-type": "application/grpc", te: "trailers" });
      req.on("error", () => {});
      const answered = new Promise<number | undefined>((resolve) => {
        req.once("response", (h) => resolve(h["grpc-status"] === undefined ? undefined : Number(h["grpc-status"])));
        req.once("close", () => resolve(undefined));
      });
      req.write(grpcMessage(Buffer.alloc(send), announce));
      return { req, answered };
    };
    const timed = <T>(p: Promise<T>, ms: number) => Promise.race([p, sleep(ms).then(() => "timeout" as const)]);

    // 1. A 33 MiB message is refused from its prefix: the status comes before the body, none of which is kept.
    const s1 = await connect();
    const big = request(s1, 33 * MiB, 64 * 1024);
    expect(await timed(big.answered, 1000)).toBe(status.RESOURCE_EXHAUSTED);
    expect((await sample()).inflightBytes).toBe(0);

    // 2. Sixteen 31 MiB messages on one connection: one is admitted, fifteen refused at once.
    const s2 = await connect();
    const sixteen = Array.from({ length: 16 }, () => request(s2, 31 * MiB, 256 * 1024));
    const outcomes = await Promise.all(sixteen.map((x) => timed(x.answered, 1000)));
    expect(outcomes.filter((o) => o === status.RESOURCE_EXHAUSTED).length).toBe(15);
    expect(outcomes.filter((o) => o === "timeout").length).toBe(1);
    s1.destroy();
    s2.destroy();
    await settle();

    // 3. Four connections each sending 30 MiB of a 31 MiB message: the node-wide 64 MiB admits two.
    const rssBefore = (await sample()).rss;
    const sessions = await Promise.all([0, 1, 2, 3].map(() => connect()));
    const admitted: ReturnType<typeof request>[] = [];
    let refusedTotal = 0;
    for (const s of sessions) {
      const r = request(s, 31 * MiB, 1024);
      if ((await timed(r.answered, 300)) === status.RESOURCE_EXHAUSTED) refusedTotal++;
      else admitted.push(r);
    }
    expect(admitted.length).toBe(2);
    expect(refusedTotal).toBe(2);
    const chunk = Buffer.alloc(MiB);
    await Promise.all(
      admitted.map(async ({ req }) => {
        for (let i = 0; i < 30; i++) {
          if (!req.write(chunk)) await new Promise((r) => req.once("drain", r));
        }
      }),
    );
    await sleep(300);
    const held = await sample();
    expect(held.inflightBytes).toBe(2 * 31 * MiB);
    // Two buffered 30 MiB bodies, and nothing like the 500 MB sixteen of them once took.
    expect(held.rss - rssBefore, "RSS growth while 60 MiB of requests are buffered").toBeLessThan(200 * MiB);
    for (const s of sessions) s.destroy();
    await settle();

    // 4. A message whose bytes stop arriving is refused after messageStallMs, and its reservation freed.
    const s4 = await connect();
    const stalled = request(s4, MiB, 1024);
    expect(await timed(stalled.answered, LIMITS.messageStallMs + 1500)).toBe(status.DEADLINE_EXCEEDED);
    s4.destroy();
    figures.churned += 8;
    await afterPhase("oversized messages");
  }, 120_000);

  it("closes idle connections, slow handshakes, and connections over the cap", async () => {
    // Completed TLS and preface, then silence: closed after the idle timeout (GOAWAY) and the close grace.
    const idle = (await Promise.all(Array.from({ length: 30 }, () => tlsConnect(port)))).filter((c) => c !== undefined);
    for (const c of idle) {
      c.tls.on("data", () => {});
      c.tls.write(Buffer.concat([PREFACE, settings()]));
    }
    // TCP only, and a ClientHello trickled a byte at a time: closed by the handshake timeout.
    const silent = Array.from({ length: 20 }, () => net.connect({ port, host: "127.0.0.1" }).on("error", () => {}));
    const hello = await captureClientHello();
    const slow = Array.from({ length: 10 }, () => {
      const s = net.connect({ port, host: "127.0.0.1" }).on("error", () => {});
      let i = 0;
      const t = setInterval(() => (s.destroyed || i >= hello.length ? clearInterval(t) : s.write(hello.subarray(i, ++i))), 100);
      return s;
    });
    const all = [...idle.map((c) => c.raw), ...silent, ...slow];
    const closed = await Promise.all(all.map((s) => closedWithin(s, LIMITS.idleTimeoutMs + LIMITS.closeGraceMs + 3000)));
    expect(closed.filter((x) => !x).length, "connections the node never closed").toBe(0);
    figures.churned += all.length;
    await settle();

    // Over the cap: the extra connections are closed at once, the node never holds more than the cap.
    const flood = Array.from({ length: LIMITS.maxConnections + 16 }, () => net.connect({ port, host: "127.0.0.1" }).on("error", () => {}));
    await sleep(300);
    const s = await sample();
    expect(s.openSockets).toBeLessThanOrEqual(LIMITS.maxConnections);
    expect(flood.filter((x) => x.destroyed || x.readableEnded).length).toBeGreaterThanOrEqual(16);
    await Promise.all(flood.map((x) => closedWithin(x, LIMITS.handshakeTimeoutMs + 3000)));
    figures.churned += flood.length;
    await afterPhase("idle, slow, cap");
  }, 120_000);

  it("does the same over mutual TLS: resets after the handshake and refused certificates", async () => {
    const cfgs = await clusterConfigs();
    const c = client();
    await apply(c, cfgs.controlplane);
    c.close();
    creds = talosconfigCreds(cfgs.talosconfig);
    await eventually(() => probe(), 10_000);
    await settle();
    const mtlsOpts = { ca: creds.ca, cert: creds.crt, key: creds.key };
    const rng = prng(SEED + 3);
    let kept = 0;
    await pool(400, 32, async () => {
      const kind = rng.pick(["handshake-reset", "preface-reset", "call-reset", "handshake-notify"] as const);
      if (!(await churnOne(kind, rng, mtlsOpts))) kept++;
    });
    // No certificate at all: refused with an alert, then closed.
    await pool(200, 32, async () => {
      if (!(await churnOne(rng.pick(["handshake-fin", "preface-fin", "handshake-reset"] as const), rng))) kept++;
    });
    expect(kept).toBe(0);
    await afterPhase("mTLS churn");
  }, 120_000);
});

describe("out of descriptors", () => {
  it("keeps running when every descriptor is taken (accept and spawn fail with EMFILE), and serves again once they are free", async () => {
    // A node allowed 128 descriptors and 1,000 connections: the descriptors run out first.
    const n = await startNodeProcess({ ...LIMITS, maxConnections: 1000, maxCalls: 1000, handshakeTimeoutMs: 30_000, idleTimeoutMs: 60_000 }, 128);
    try {
      const held = (await Promise.all(Array.from({ length: 140 }, () => tlsConnect(n.port)))).filter((c) => c !== undefined);
      for (const c of held) c.tls.on("data", () => {});
      expect(held.length, "connections the node took before its descriptors ran out").toBeGreaterThan(50);
      // Spawning needs descriptors too: the call fails, the process does not.
      const ip = await n.ask<{ ok?: boolean; error?: string }>("ip");
      expect(ip.error).toMatch(/EMFILE/);
      expect(n.proc.exitCode).toBeNull();
      figures.churned += held.length;
      for (const c of held) c.raw.destroy();
      const c = new TestClient(`127.0.0.1:${n.port}`, insecureTls());
      try {
        await eventually(() => c.unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {}, { deadlineMs: 1000 }), 10_000);
      } finally {
        c.close();
      }
      expect(await n.ask<{ ok?: boolean }>("ip")).toEqual({ ok: true });
      expect(n.proc.exitCode).toBeNull();
    } finally {
      await n.stop();
    }
  }, 60_000);
});
