/**
 * A tiny SNTP server on 127.0.0.1 for tests: a stand-in for an NTP server (tests have no internet). It answers
 * client requests in server mode with a configurable clock offset, stratum, leap indicator and reference time.
 */
import { createSocket, type Socket } from "node:dgram";

const NTP_EPOCH_OFFSET = 2_208_988_800;

export interface FakeNtpOptions {
  /** Added to this machine's clock in the answers, ms. */
  offsetMs?: number;
  stratum?: number;
  leap?: number;
  /** How long before "now" the server last synchronised, ms. */
  referenceAgeMs?: number;
  /** Reference id text (a kiss code at stratum 0). */
  refId?: string;
}

export interface FakeNtp {
  port: number;
  requests: number;
  set(o: FakeNtpOptions): void;
  close(): Promise<void>;
}

function ts(buf: Buffer, off: number, ms: number): void {
  buf.writeUInt32BE((Math.floor(ms / 1000) + NTP_EPOCH_OFFSET) >>> 0, off);
  buf.writeUInt32BE(Math.floor(((ms % 1000) / 1000) * 2 ** 32) >>> 0, off + 4);
}

export async function startFakeNtp(initial: FakeNtpOptions = {}): Promise<FakeNtp> {
  let o: FakeNtpOptions = { offsetMs: 0, stratum: 2, leap: 0, referenceAgeMs: 30_000, refId: "", ...initial };
  const sock: Socket = createSocket("udp4");
  const srv: FakeNtp = {
    port: 0,
    requests: 0,
    set: (next) => (o = { ...o, ...next }),
    close: () => new Promise((r) => sock.close(() => r())),
  };
  sock.on("message", (msg, rinfo) => {
    if (msg.length < 48 || (msg[0] & 7) !== 3) return;
    srv.requests++;
    const now = Date.now() + (o.offsetMs ?? 0);
    const res = Buffer.alloc(48);
    res[0] = ((o.leap ?? 0) << 6) | (4 << 3) | 4; // server mode
    res[1] = o.stratum ?? 2;
    res[2] = 6;
    res[3] = 0xec; // precision ~ 2^-20 s
    res.writeUInt32BE(0x00000800, 4); // root delay: 1/32 s
    res.writeUInt32BE(0x00000400, 8); // root dispersion: 1/64 s
    Buffer.from((o.refId ?? "").padEnd(4, "\0").slice(0, 4), "latin1").copy(res, 12);
    ts(res, 16, now - (o.referenceAgeMs ?? 30_000));
    msg.copy(res, 24, 40, 48); // originate = the client's transmit time
    ts(res, 32, now);
    ts(res, 40, now);
    sock.send(res, rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => sock.bind(0, "127.0.0.1", () => r()));
  srv.port = sock.address().port;
  return srv;
}
