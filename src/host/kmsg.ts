/**
 * Kernel log reader for the Dmesg API: parses /dev/kmsg records and renders them byte-for-byte the way
 * Talos does (`<facility>: <priority %7s>: [<RFC3339Nano>]: <message>`), because talosctl prints each
 * chunk verbatim after "<node>: ".
 *
 * Record format (Documentation/ABI/testing/dev-kmsg): `<prio>,<seq>,<usec>,<flags>[,caller=..];<text>\n`
 * followed by optional ` KEY=value\n` continuation lines. Non-printable bytes in text arrive as \xNN.
 */
import { constants } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { readUptime } from "./proc/system.js";
import type { RootOptions } from "./proc/fs.js";

const FACILITIES = [
  "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv",
  "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
];
const PRIORITIES = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"];

export interface KmsgRecord {
  facility: number;
  priority: number;
  seq: number;
  /** Microseconds since boot (kernel local clock). */
  usec: number;
  /** "-" for a complete record, "c"/"+" for continuation fragments on old kernels. */
  flags: string;
  /** The `caller=T123` field of kernels built with CONFIG_PRINTK_CALLER, if present. */
  caller?: string;
  /** First line of the message, unescaped. */
  message: string;
  /** Continuation `KEY=value` lines (e.g. SUBSYSTEM, DEVICE). */
  dict: Record<string, string>;
  /** Everything after ';' unescaped, continuation lines and final newline included: what Talos sends. */
  text: string;
}

export const facilityName = (f: number) => FACILITIES[f] ?? String(f);
export const priorityName = (p: number) => PRIORITIES[p] ?? String(p);

/**
 * Decodes \xNN and \\ like upstream's go-kmsg: any other backslash sequence (or a malformed \x) is
 * dropped rather than passed through.
 */
export function unescapeKmsg(input: Uint8Array): Buffer {
  const out = Buffer.alloc(input.length);
  let n = 0;
  const hex = (c: number) =>
    c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
  for (let i = 0; i < input.length; i++) {
    const c = input[i];
    if (c !== 0x5c) {
      out[n++] = c;
      continue;
    }
    const next = input[i + 1];
    if (next === 0x5c) {
      out[n++] = 0x5c;
      i += 1;
    } else if (next === 0x78 /* x */) {
      const hi = hex(input[i + 2] ?? -1);
      const lo = hi < 0 ? -1 : hex(input[i + 3] ?? -1);
      if (hi >= 0 && lo >= 0) out[n++] = (hi << 4) | lo;
      i += hi < 0 ? 2 : 3; // upstream swallows the offending byte too
    } else {
      i += 1;
    }
  }
  return out.subarray(0, n);
}

export function parseKmsgRecord(raw: Uint8Array): KmsgRecord {
  const buf = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const semi = buf.indexOf(0x3b /* ; */);
  if (semi < 0) throw new Error("kernel message should contain a prefix");
  const meta = buf.subarray(0, semi).toString("latin1").split(",");
  if (meta.length < 3) throw new Error(`kernel message metadata should have at least 3 parts, got ${meta.length}`);
  const [prio, seq, usec] = meta.slice(0, 3).map((s) => (/^\d+$/.test(s) ? Number(s) : Number.NaN));
  if ([prio, seq, usec].some(Number.isNaN)) throw new Error(`malformed kernel message prefix: ${meta.join(",")}`);
  const caller = meta.slice(4).find((m) => m.startsWith("caller="))?.slice("caller=".length);

  const text = unescapeKmsg(buf.subarray(semi + 1)).toString("utf8");
  const [message, ...rest] = text.replace(/\n$/, "").split("\n");
  const dict: Record<string, string> = {};
  for (const line of rest) {
    const kv = line.replace(/^ /, "");
    const eq = kv.indexOf("=");
    if (eq > 0) dict[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  return {
    facility: prio >> 3,
    priority: prio & 7,
    seq,
    usec,
    flags: meta[3] ?? "-",
    ...(caller ? { caller } : {}),
    message,
    dict,
    text,
  };
}

/** Go's time.RFC3339Nano in UTC: fractional seconds without trailing zeros, no fraction at all if zero. */
export function formatRFC3339Nano(unixNs: bigint): string {
  const sec = unixNs / 1_000_000_000n;
  const frac = (unixNs % 1_000_000_000n).toString().padStart(9, "0").replace(/0+$/, "");
  const base = new Date(Number(sec) * 1000).toISOString().slice(0, 19);
  return `${base}${frac ? `.${frac}` : ""}Z`;
}

/** One Dmesg chunk. The kernel's text already ends with "\n"; we add one only if it is missing. */
export function formatKmsgRecord(rec: KmsgRecord, bootTimeNs: bigint): string {
  const ts = formatRFC3339Nano(bootTimeNs + BigInt(rec.usec) * 1000n);
  const line = `${facilityName(rec.facility)}: ${priorityName(rec.priority).padStart(7)}: [${ts}]: ${rec.text}`;
  return line.endsWith("\n") ? line : `${line}\n`;
}

/** Wall-clock boot time in ns: now − /proc/uptime, as upstream derives it. */
export async function bootTimeNs(opts?: RootOptions): Promise<bigint> {
  const { uptime } = await readUptime(opts);
  const nowNs = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
  return nowNs - BigInt(Math.round(uptime * 1e9));
}

export interface ReadKmsgOptions extends RootOptions {
  /** Keep the stream open and emit new records as they arrive. */
  follow?: boolean;
  /** Skip records that already exist (only meaningful with follow). */
  tail?: boolean;
  signal?: AbortSignal;
  /** Device path; defaults to /dev/kmsg (under `root` when given). */
  path?: string;
  /** Boot time override in Unix ns (tests); defaults to now − uptime. */
  bootTimeNs?: bigint;
  /** How often follow mode re-checks an idle log. */
  pollIntervalMs?: number;
}

/** Large enough for any record: the kernel rejects reads into a buffer smaller than the record (EINVAL). */
const RECORD_BUF = 16 * 1024;

async function openKmsg(path: string): Promise<FileHandle> {
  try {
    // Non-blocking so a drained log yields EAGAIN instead of parking a libuv worker thread forever.
    return await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "unknown error";
    const why =
      code === "ENOENT"
        ? "does not exist on this system"
        : code === "EPERM" || code === "EACCES"
          ? "is not readable by this process (containers and unprivileged users usually lack CAP_SYSLOG)"
          : "could not be opened";
    throw new Error(`kernel log is not available: ${path} ${why} (${code})`, { cause: err });
  }
}

/**
 * Yields one formatted chunk per kernel record. Without `follow` it ends when the log is drained; with
 * `follow` it polls for new records until `signal` aborts. Open failures throw a plain Error saying why.
 */
export async function* readKmsg(opts: ReadKmsgOptions = {}): AsyncGenerator<string> {
  const path = opts.path ?? (opts.root ? `${opts.root.replace(/\/$/, "")}/dev/kmsg` : "/dev/kmsg");
  const boot = opts.bootTimeNs ?? (await bootTimeNs(opts));
  const interval = opts.pollIntervalMs ?? 200;
  const fh = await openKmsg(path);
  const buf = Buffer.alloc(RECORD_BUF);
  // Node cannot lseek(SEEK_END) a device, so "tail" drains the backlog without emitting it.
  let skipping = Boolean(opts.tail);
  try {
    while (!opts.signal?.aborted) {
      let n: number;
      try {
        ({ bytesRead: n } = await fh.read(buf, 0, buf.length, null));
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "EPIPE") continue; // records were overwritten before we read them; carry on
        if (code !== "EAGAIN") {
          if (code === "EPERM" || code === "EACCES") {
            throw new Error(`kernel log is not available: ${path} is not readable by this process (${code})`, { cause: err });
          }
          throw new Error(`error reading from kmsg: ${(err as Error).message}`, { cause: err });
        }
        skipping = false;
        if (!opts.follow) return;
        try {
          await sleep(interval, undefined, { signal: opts.signal });
        } catch {
          return; // aborted while idle
        }
        continue;
      }
      if (n === 0) return;
      if (skipping) continue;
      yield formatKmsgRecord(parseKmsgRecord(buf.subarray(0, n)), boot);
    }
  } finally {
    await fh.close();
  }
}
