/**
 * The load client of `npm run bench`, one process pinned to its own core: the same client drives
 * machined and the floor. Commands arrive as JSON lines on stdin, answers leave as JSON lines on stdout
 * (one per command, in order). Messages stay raw bytes: the client decodes nothing, so its own cost
 * does not depend on the server under test.
 *
 *   {"op":"connect","address","ca","crt","key"}           mTLS channel (one HTTP/2 connection)
 *   {"op":"unary","path","req"}                           one call → {"res": base64}
 *   {"op":"load","path","c","ms"}                         c workers calling back to back → calls, p50, p99
 *   {"op":"stream","path","req"}                          one server stream → {"msgs": [base64], "ms"}
 *   {"op":"streams","path","req","n","times"}             `times` streams back to back → wall ms each
 *   {"op":"watch","path","req","n"}                       opens n streams, answers once each got its first reply
 *   {"op":"watchArm"}                                     from now on, wait for one more reply on every watcher
 *   {"op":"watchWait"}                                    answers once they all got it: the wall clock (ms since
 *                                                         the epoch, sub-ms) of the last arrival
 *   {"op":"unwatch"} / {"op":"close"}
 */
import { createInterface } from "node:readline";
import * as grpc from "@grpc/grpc-js";

const raw = (b: Buffer) => b;
const wallNow = () => performance.timeOrigin + performance.now();
let client: grpc.Client | undefined;
let watches: grpc.ClientReadableStream<Buffer>[] = [];
let watchCounts: number[] = [];
let onWatchMsg: (() => void) | undefined;
let armed: Promise<number> | undefined;

interface Cmd {
  op: string;
  address?: string;
  ca?: string;
  crt?: string;
  key?: string;
  path?: string;
  req?: string;
  c?: number;
  ms?: number;
  n?: number;
  times?: number;
}

function need(): grpc.Client {
  if (!client) throw new Error("not connected");
  return client;
}

function unary(path: string, req: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    need().makeUnaryRequest(path, raw, raw, req, (err, res) => (err ? reject(err) : resolve(res as Buffer))),
  );
}

function stream(path: string, req: Buffer): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const out: Buffer[] = [];
    const call = need().makeServerStreamRequest(path, raw, raw, req);
    call.on("data", (b: Buffer) => out.push(b));
    call.on("error", reject);
    call.on("end", () => resolve(out));
  });
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

async function load(path: string, c: number, ms: number) {
  const lat: number[] = [];
  const until = performance.now() + ms;
  const empty = Buffer.alloc(0);
  const worker = async () => {
    while (performance.now() < until) {
      const t = performance.now();
      await unary(path, empty);
      lat.push(performance.now() - t);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: c }, worker));
  const elapsed = performance.now() - t0;
  return { calls: lat.length, elapsedMs: elapsed, p50: pct(lat, 50), p99: pct(lat, 99) };
}

async function handle(cmd: Cmd): Promise<unknown> {
  switch (cmd.op) {
    case "connect": {
      const creds = grpc.credentials.createSsl(Buffer.from(cmd.ca!), Buffer.from(cmd.key!), Buffer.from(cmd.crt!), {
        checkServerIdentity: () => undefined,
      });
      client = new grpc.Client(cmd.address!, creds, { "grpc.max_receive_message_length": 64 * 1024 * 1024 });
      await new Promise<void>((resolve, reject) => client!.waitForReady(Date.now() + 20_000, (e) => (e ? reject(e) : resolve())));
      return {};
    }
    case "unary":
      return { res: (await unary(cmd.path!, Buffer.from(cmd.req ?? "", "base64"))).toString("base64") };
    case "load":
      return load(cmd.path!, cmd.c!, cmd.ms!);
    case "stream": {
      const t = performance.now();
      const msgs = await stream(cmd.path!, Buffer.from(cmd.req ?? "", "base64"));
      return { ms: performance.now() - t, msgs: msgs.map((m) => m.toString("base64")) };
    }
    case "streams": {
      const req = Buffer.from(cmd.req ?? "", "base64");
      const ms: number[] = [];
      let count = 0;
      for (let i = 0; i < (cmd.times ?? 1); i++) {
        const t = performance.now();
        count = (await stream(cmd.path!, req)).length;
        ms.push(performance.now() - t);
      }
      return { ms, count };
    }
    case "watch": {
      const req = Buffer.from(cmd.req ?? "", "base64");
      const n = cmd.n ?? 1;
      watchCounts = Array<number>(n).fill(0);
      let ready = 0;
      await new Promise<void>((resolve, reject) => {
        watches = Array.from({ length: n }, (_, i) => {
          const call = need().makeServerStreamRequest(cmd.path!, raw, raw, req);
          call.on("data", () => {
            if (watchCounts[i]++ === 0 && ++ready === n) resolve();
            else onWatchMsg?.();
          });
          call.on("error", (err: grpc.ServiceError) => {
            if (err.code !== grpc.status.CANCELLED) reject(err);
          });
          return call;
        });
      });
      return { ready };
    }
    case "watchArm": {
      const target = watchCounts.map((c) => c + 1);
      const done = () => watchCounts.every((c, i) => c >= target[i]);
      armed = new Promise<number>((resolve) => {
        onWatchMsg = () => {
          if (!done()) return;
          onWatchMsg = undefined;
          resolve(wallNow());
        };
      });
      return {};
    }
    case "watchWait":
      return { lastAt: await armed };
    case "unwatch":
      for (const w of watches) w.cancel();
      watches = [];
      return {};
    case "close":
      client?.close();
      client = undefined;
      return {};
    default:
      throw new Error(`unknown op ${cmd.op}`);
  }
}

// Commands run one at a time, in order, each answered before the next starts.
const queue: Cmd[] = [];
let busy = false;
async function pump() {
  if (busy) return;
  busy = true;
  while (queue.length) {
    const cmd = queue.shift()!;
    try {
      process.stdout.write(`${JSON.stringify({ ok: true, ...(await handle(cmd) as object) })}\n`);
    } catch (err) {
      process.stdout.write(`${JSON.stringify({ ok: false, error: String((err as Error).message ?? err) })}\n`);
    }
  }
  busy = false;
}
createInterface({ input: process.stdin }).on("line", (line) => {
  if (!line.trim()) return;
  queue.push(JSON.parse(line) as Cmd);
  void pump();
});
