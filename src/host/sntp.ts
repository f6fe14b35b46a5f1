/**
 * One SNTP query (RFC 4330 / RFC 5905 client mode) over UDP, and the checks upstream's NTP client library applies
 * before trusting the answer: for `talosctl time`, which shows the node's clock next to its time server's.
 */
import { createSocket } from "node:dgram";
import { lookup } from "node:dns/promises";

/** Seconds between the NTP era (1900) and the Unix epoch (1970). */
const NTP_EPOCH_OFFSET = 2_208_988_800;
/** Upstream's limits: answers older than ~36 h (2^17 s) or with a synchronisation distance over 16 s are not trusted. */
const MAX_POLL_INTERVAL_S = 2 ** 17;
const MAX_DISPERSION_S = 16;

export interface SntpResponse {
  /** The server's transmit time (when it answered). */
  time: Date;
  /** Estimated offset of the local clock from the server's, in ms (positive: local is behind). */
  clockOffsetMs: number;
  rttMs: number;
  stratum: number;
  leap: number;
  referenceTime: Date;
  /** Root delay and root dispersion, in seconds. */
  rootDelay: number;
  rootDispersion: number;
  /** Reference id: 4 ASCII characters at stratum 0/1 (a kiss code, a clock source), an address above. */
  referenceId: string;
}

export interface SntpOptions {
  /** Default 123; a `host:port` server overrides it. */
  port?: number;
  timeoutMs?: number;
  /** The local clock (ms since the epoch); injectable for tests. */
  now?: () => number;
}

function writeTimestamp(buf: Buffer, off: number, ms: number): void {
  const secs = Math.floor(ms / 1000) + NTP_EPOCH_OFFSET;
  const frac = Math.floor(((ms % 1000) / 1000) * 2 ** 32);
  buf.writeUInt32BE(secs >>> 0, off);
  buf.writeUInt32BE(frac >>> 0, off + 4);
}

function readTimestamp(buf: Buffer, off: number): number {
  const secs = buf.readUInt32BE(off);
  const frac = buf.readUInt32BE(off + 4);
  return (secs - NTP_EPOCH_OFFSET) * 1000 + (frac / 2 ** 32) * 1000;
}

/** `host`, `host:port`, `[v6]` or `[v6]:port`. */
export function splitServer(server: string, defaultPort: number): { host: string; port: number } {
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(server);
  if (bracket) return { host: bracket[1], port: bracket[2] ? Number(bracket[2]) : defaultPort };
  const colons = server.split(":").length - 1;
  if (colons === 1) {
    const [host, port] = server.split(":");
    return { host, port: Number(port) };
  }
  return { host: server, port: defaultPort };
}

export async function sntpQuery(server: string, opts: SntpOptions = {}): Promise<SntpResponse> {
  const now = opts.now ?? Date.now;
  const { host, port } = splitServer(server, opts.port ?? 123);
  if (!host || !(port > 0 && port < 65536)) throw new Error(`invalid server address ${JSON.stringify(server)}`);
  const addr = await lookup(host).catch((err: NodeJS.ErrnoException) => {
    // Go's resolver wording, which upstream's errors carry.
    throw new Error(err.code === "ENOTFOUND" ? `lookup ${host}: no such host` : `lookup ${host}: ${err.message}`);
  });
  const sock = createSocket(addr.family === 6 ? "udp6" : "udp4");
  const req = Buffer.alloc(48);
  req[0] = (0 << 6) | (4 << 3) | 3; // LI 0, version 4, mode 3 (client)
  try {
    return await new Promise<SntpResponse>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read udp ${addr.address}:${port}: i/o timeout`)), opts.timeoutMs ?? 5000);
      let t1 = 0;
      let sent = Buffer.alloc(8);
      sock.once("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
      sock.on("message", (msg) => {
        const t4 = now();
        // Only the answer to our request counts (its originate time echoes our transmit time).
        if (msg.length < 48 || !msg.subarray(24, 32).equals(sent)) return;
        clearTimeout(timer);
        const mode = msg[0] & 7;
        if (mode !== 4 && mode !== 5) return reject(new Error("invalid mode in response"));
        const t2 = readTimestamp(msg, 32);
        const t3 = readTimestamp(msg, 40);
        const stratum = msg[1];
        const refId = msg.subarray(12, 16);
        resolve({
          time: new Date(t3),
          clockOffsetMs: (t2 - t1 + (t3 - t4)) / 2,
          rttMs: t4 - t1 - (t3 - t2),
          stratum,
          leap: msg[0] >> 6,
          referenceTime: new Date(readTimestamp(msg, 16)),
          rootDelay: msg.readUInt32BE(4) / 65536,
          rootDispersion: msg.readUInt32BE(8) / 65536,
          referenceId: stratum <= 1 ? refId.toString("latin1").replace(/\0+$/, "") : [...refId].join("."),
        });
      });
      t1 = now();
      writeTimestamp(req, 40, t1);
      sent = Buffer.from(req.subarray(40, 48));
      sock.send(req, port, addr.address, (err) => {
        if (err) {
          clearTimeout(timer);
          reject(err);
        }
      });
    });
  } finally {
    sock.close();
  }
}

/** The checks upstream's client runs before trusting an answer; throws with its wording. */
export function validateSntp(r: SntpResponse): void {
  if (r.stratum === 0) throw new Error(`kiss of death received: ${r.referenceId}`);
  if (r.stratum >= 16) throw new Error("invalid stratum in response");
  if ((r.time.getTime() - r.referenceTime.getTime()) / 1000 > MAX_POLL_INTERVAL_S) throw new Error("server clock not fresh");
  if (r.rootDelay / 2 + r.rootDispersion > MAX_DISPERSION_S) throw new Error("invalid dispersion");
  if (r.time.getTime() < r.referenceTime.getTime()) throw new Error("invalid time reported");
  if (r.leap === 3) throw new Error("invalid leap second");
}
