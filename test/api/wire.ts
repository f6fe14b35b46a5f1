/**
 * Hand-made wire input for the transport tests: raw TCP and TLS connections, HTTP/2 frames, HPACK header
 * blocks (literal fields, no Huffman) and gRPC messages, so a test can send what no well-behaved client
 * would: resets at any point, garbage, malformed frames, thousands of streams, lying length prefixes.
 */
import * as net from "node:net";
import * as tls from "node:tls";

/** Deterministic PRNG (mulberry32): the same seed gives the same fuzz run. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)],
    bytes: (n: number) => {
      const b = Buffer.alloc(n);
      for (let i = 0; i < n; i++) b[i] = Math.floor(next() * 256);
      return b;
    },
  };
}
export type Prng = ReturnType<typeof prng>;

export const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

export const FrameType = { DATA: 0, HEADERS: 1, PRIORITY: 2, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
export const Flag = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4 } as const;

export function frame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([h, payload]);
}

export const settings = (ack = false) => frame(FrameType.SETTINGS, ack ? Flag.ACK : 0, 0);

function hpackInt(value: number, prefixBits: number, first: number): Buffer {
  const max = (1 << prefixBits) - 1;
  if (value < max) return Buffer.from([first | value]);
  const out = [first | max];
  let v = value - max;
  while (v >= 128) {
    out.push((v % 128) + 128);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Buffer.from(out);
}

/** A header block of "literal without indexing, new name" fields (RFC 7541 §6.2.2). */
export function hpack(headers: [string, string][]): Buffer {
  const parts: Buffer[] = [];
  for (const [k, v] of headers) {
    const name = Buffer.from(k, "latin1");
    const value = Buffer.from(v, "latin1");
    parts.push(Buffer.from([0]), hpackInt(name.length, 7, 0), name, hpackInt(value.length, 7, 0), value);
  }
  return Buffer.concat(parts);
}

export function grpcRequestHeaders(path: string, extra: [string, string][] = []): Buffer {
  return hpack([
    [":method", "POST"],
    [":scheme", "https"],
    [":path", path],
    [":authority", "127.0.0.1"],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
    ...extra,
  ]);
}

/** A gRPC length-prefixed message; `announce` lets the prefix lie about the length. */
export function grpcMessage(body: Buffer, announce = body.length, compressed = false): Buffer {
  const p = Buffer.alloc(5);
  p[0] = compressed ? 1 : 0;
  p.writeUInt32BE(announce >>> 0, 1);
  return Buffer.concat([p, body]);
}

export const VERSION_PATH = "/machine.MachineService/Version";

export interface TlsConn {
  raw: net.Socket;
  tls: tls.TLSSocket;
  closed: Promise<void>;
}

/**
 * A TLS connection over a TCP socket we keep a handle on (for resets). Resolves once the handshake
 * completed, or undefined if the connection died before that.
 */
export function tlsConnect(port: number, opts: tls.ConnectionOptions = {}): Promise<TlsConn | undefined> {
  return new Promise((resolve) => {
    const raw = net.connect({ port, host: "127.0.0.1" });
    raw.on("error", () => {});
    const closed = new Promise<void>((r) => raw.once("close", () => r()));
    const t = tls.connect({ socket: raw, rejectUnauthorized: false, ALPNProtocols: ["h2"], ...opts }, () => resolve({ raw, tls: t, closed }));
    t.on("error", () => resolve(undefined));
    void closed.then(() => resolve(undefined));
  });
}

/** Resolves when `socket` closes, or destroys it after `ms` and resolves false. */
export function closedWithin(socket: net.Socket, ms: number): Promise<boolean> {
  if (socket.destroyed) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(false);
    }, ms);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** Run `fn` for i in [0, n) with at most `concurrency` at a time. */
export async function pool(n: number, concurrency: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

/** Collects the HTTP/2 frames a server sends on `s` (after its connection preface, which is a frame too). */
export function frameReader(s: tls.TLSSocket) {
  let buf = Buffer.alloc(0);
  const frames: Frame[] = [];
  const waiters: { match: (f: Frame) => boolean; resolve: (f: Frame | undefined) => void }[] = [];
  let closed = false;
  s.on("data", (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 9) {
      const len = buf.readUIntBE(0, 3);
      if (buf.length < 9 + len) break;
      const f = { type: buf[3], flags: buf[4], streamId: buf.readUInt32BE(5) & 0x7fffffff, payload: buf.subarray(9, 9 + len) };
      buf = buf.subarray(9 + len);
      frames.push(f);
      for (const w of [...waiters]) {
        if (w.match(f)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(f);
        }
      }
    }
  });
  s.once("close", () => {
    closed = true;
    for (const w of waiters.splice(0)) w.resolve(undefined);
  });
  return {
    frames,
    /** The first frame (already received or coming) that matches, or undefined if the connection closed or `ms` passed. */
    wait(match: (f: Frame) => boolean, ms: number): Promise<Frame | undefined> {
      const seen = frames.find(match);
      if (seen || closed) return Promise.resolve(seen);
      return new Promise((resolve) => {
        const w = { match, resolve };
        waiters.push(w);
        setTimeout(() => {
          const i = waiters.indexOf(w);
          if (i >= 0) {
            waiters.splice(i, 1);
            resolve(undefined);
          }
        }, ms);
      });
    },
    get closed() {
      return closed;
    },
  };
}

/** The first bytes a TLS client sends (its ClientHello), captured from a throwaway local server. */
export function captureClientHello(opts: tls.ConnectionOptions = {}): Promise<Buffer> {
  return new Promise((resolve) => {
    const srv = net.createServer((s) => {
      s.once("data", (d) => {
        resolve(d);
        s.destroy();
        srv.close();
      });
    });
    srv.listen(0, "127.0.0.1", () => {
      const t = tls.connect({ port: (srv.address() as net.AddressInfo).port, host: "127.0.0.1", rejectUnauthorized: false, ALPNProtocols: ["h2"], ...opts });
      t.on("error", () => {});
    });
  });
}
