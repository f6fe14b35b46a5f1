/**
 * Service logs: each service writes to a bounded in-memory ring (what the Logs RPC serves, tail then
 * follow) and to a size-rotated file under `<state>/logs/<id>.log` (what survives a restart of the agent).
 */
import { mkdirSync, renameSync, statSync, rmSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { Writable } from "node:stream";

export interface LogReadOptions {
  /** -1 (default): everything in the ring; N >= 0: the last N lines. */
  tailLines?: number;
  follow?: boolean;
  signal?: AbortSignal;
}

export interface LogSettings {
  ringBytes: number;
  /** Rotate the file when it would grow past this size. */
  fileMaxBytes: number;
  /** Rotated files to keep (<id>.log.1 ... <id>.log.N). */
  keepFiles: number;
}

export const defaultLogSettings: LogSettings = { ringBytes: 1 << 20, fileMaxBytes: 10 << 20, keepFiles: 2 };

const NL = 0x0a;
/** A follower that falls further behind than this loses its oldest queued chunks. */
const FOLLOW_QUEUE_MAX = 4 << 20;

/** The last N lines of buf (a trailing newline does not count as an empty line). */
export function tailLines(buf: Buffer, n: number): Buffer {
  if (n < 0) return buf;
  if (n === 0) return Buffer.alloc(0);
  let idx = buf.length;
  if (idx > 0 && buf[idx - 1] === NL) idx--;
  for (let i = 0; i < n; i++) {
    const p = idx > 0 ? buf.lastIndexOf(NL, idx - 1) : -1;
    if (p < 0) return buf;
    idx = p;
  }
  return buf.subarray(idx + 1);
}

export class ServiceLog {
  private chunks: Buffer[] = [];
  private size = 0;
  private followers = new Set<(b: Buffer) => void>();
  private lastLineText = "";
  private pending: Buffer[] = [];
  private writing: Promise<void> | null = null;
  private fh: FileHandle | null = null;
  private fileSize = -1;
  private fileBroken = false;
  private closed = false;

  constructor(
    readonly id: string,
    private readonly settings: LogSettings,
    /** null: memory only. */
    readonly filePath: string | null,
  ) {}

  write(data: Buffer | string): void {
    if (this.closed) return;
    const b = typeof data === "string" ? Buffer.from(data) : data;
    if (b.length === 0) return;
    this.append(b);
    this.trackLastLine(b);
    for (const f of this.followers) f(b);
    if (this.filePath && !this.fileBroken) {
      this.pending.push(b);
      this.writing ??= this.drain();
    }
  }

  /** The last non-empty line written, for error messages ("last log ..."). */
  lastLine(): string {
    return this.lastLineText;
  }

  /** The ring's content, trimmed to lines. */
  tail(lines = -1): Buffer {
    return tailLines(Buffer.concat(this.chunks, this.size), lines);
  }

  /** Tail, then (with follow) everything written afterwards until the signal aborts or the log closes. */
  async *read(opts: LogReadOptions = {}): AsyncGenerator<Buffer> {
    const { tailLines: n = -1, follow = false, signal } = opts;
    const queue: Buffer[] = [];
    let queued = 0;
    let wake: (() => void) | null = null;
    const push = (b: Buffer) => {
      queue.push(b);
      queued += b.length;
      while (queued > FOLLOW_QUEUE_MAX && queue.length > 1) queued -= (queue.shift() as Buffer).length;
      wake?.();
    };
    const onAbort = () => wake?.();
    // Subscribe before taking the tail so nothing written in between is lost.
    if (follow) this.followers.add(push);
    signal?.addEventListener("abort", onAbort);
    try {
      const t = this.tail(n);
      if (t.length > 0) yield t;
      if (!follow) return;
      while (!signal?.aborted && !this.closed) {
        if (queue.length > 0) {
          const out = Buffer.concat(queue.splice(0));
          queued = 0;
          yield out;
          continue;
        }
        await new Promise<void>((r) => (wake = r));
        wake = null;
      }
    } finally {
      this.followers.delete(push);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** A stream sink (e.g. for pino) that appends to this log. */
  writable(): Writable {
    return new Writable({
      write: (chunk: Buffer, _enc, cb) => {
        this.write(chunk);
        cb();
      },
    });
  }

  /** Wait until everything written so far reached the file. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    for (const f of this.followers) f(Buffer.alloc(0));
    await this.fh?.close().catch(() => {});
    this.fh = null;
  }

  private append(b: Buffer): void {
    // Coalesce small writes so line-by-line output does not become thousands of tiny buffers.
    const last = this.chunks[this.chunks.length - 1];
    if (last && last.length < 4096 && b.length < 4096) this.chunks[this.chunks.length - 1] = Buffer.concat([last, b]);
    else this.chunks.push(b);
    this.size += b.length;
    if (this.size <= this.settings.ringBytes) return;
    while (this.size > this.settings.ringBytes && this.chunks.length > 0) {
      const first = this.chunks[0];
      const excess = this.size - this.settings.ringBytes;
      if (first.length <= excess) {
        this.chunks.shift();
        this.size -= first.length;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.size -= excess;
      }
    }
    // Never serve a torn first line.
    while (this.chunks.length > 0) {
      const first = this.chunks[0];
      const nl = first.indexOf(NL);
      if (nl < 0) {
        this.chunks.shift();
        this.size -= first.length;
        continue;
      }
      this.chunks[0] = first.subarray(nl + 1);
      this.size -= nl + 1;
      break;
    }
  }

  private trackLastLine(b: Buffer): void {
    const text = b.toString("utf8").trimEnd();
    if (!text) return;
    const nl = text.lastIndexOf("\n");
    this.lastLineText = (nl >= 0 ? text.slice(nl + 1) : text).slice(-512);
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const buf = Buffer.concat(this.pending.splice(0));
        await this.writeFile(buf);
      }
    } catch {
      // A full or read-only disk must not break the service; the ring keeps working.
      this.fileBroken = true;
      this.pending = [];
    } finally {
      this.writing = null;
    }
  }

  private async writeFile(buf: Buffer): Promise<void> {
    const path = this.filePath as string;
    if (this.fileSize < 0) {
      try {
        this.fileSize = statSync(path).size;
      } catch {
        this.fileSize = 0;
      }
    }
    if (this.fileSize > 0 && this.fileSize + buf.length > this.settings.fileMaxBytes) {
      await this.fh?.close();
      this.fh = null;
      rotate(path, this.settings.keepFiles);
      this.fileSize = 0;
    }
    this.fh ??= await open(path, "a", 0o600);
    await this.fh.write(buf);
    this.fileSize += buf.length;
  }
}

function rotate(path: string, keep: number): void {
  if (keep <= 0) {
    rmSync(path, { force: true });
    return;
  }
  rmSync(`${path}.${keep}`, { force: true });
  for (let i = keep - 1; i >= 1; i--) {
    try {
      renameSync(`${path}.${i}`, `${path}.${i + 1}`);
    } catch {
      // gap in the sequence
    }
  }
  renameSync(path, `${path}.1`);
}

/** All service logs of one agent; logs are created on first use, like upstream's logging manager. */
export class LogManager {
  private logs = new Map<string, ServiceLog>();
  readonly settings: LogSettings;

  /** dir: folder for <id>.log files (e.g. `<state>/logs`); null keeps logs in memory only. */
  constructor(
    readonly dir: string | null,
    settings: Partial<LogSettings> = {},
  ) {
    this.settings = { ...defaultLogSettings, ...settings };
    if (dir) mkdirSync(dir, { recursive: true });
  }

  get(id: string): ServiceLog {
    let l = this.logs.get(id);
    if (!l) {
      l = new ServiceLog(id, this.settings, this.dir ? join(this.dir, `${id}.log`) : null);
      this.logs.set(id, l);
    }
    return l;
  }

  /** Registered log ids (machine.LogsContainers). */
  ids(): string[] {
    return [...this.logs.keys()].sort();
  }

  read(id: string, opts?: LogReadOptions): AsyncIterable<Buffer> {
    return this.get(id).read(opts);
  }

  /** A writable sink for `id`; the agent points its own logger at writer("machined"). */
  writer(id: string): Writable {
    return this.get(id).writable();
  }

  async close(): Promise<void> {
    await Promise.all([...this.logs.values()].map((l) => l.close()));
  }
}

/**
 * Tail (and follow, by polling) a plain log file, e.g. one a container writes. A file that shrinks was
 * rotated or truncated, so following restarts from its beginning.
 */
export async function* followFile(path: string, opts: LogReadOptions & { pollMs?: number } = {}): AsyncGenerator<Buffer> {
  const { tailLines: n = -1, follow = false, signal, pollMs = 200 } = opts;
  let fh: FileHandle;
  try {
    fh = await open(path, "r");
  } catch {
    if (!follow) return;
    fh = await waitForFile(path, pollMs, signal);
  }
  try {
    let pos = 0;
    const { size } = await fh.stat();
    // Tail from at most the last ring-size of the file: tails of huge files stay cheap.
    const start = Math.max(0, size - defaultLogSettings.ringBytes);
    const head = Buffer.alloc(size - start);
    await fh.read(head, 0, head.length, start);
    pos = size;
    const t = tailLines(start > 0 ? head.subarray(head.indexOf(NL) + 1) : head, n);
    if (t.length > 0) yield t;
    while (follow && !signal?.aborted) {
      const cur = (await fh.stat()).size;
      if (cur < pos) pos = 0;
      if (cur > pos) {
        const b = Buffer.alloc(cur - pos);
        const { bytesRead } = await fh.read(b, 0, b.length, pos);
        pos += bytesRead;
        if (bytesRead > 0) yield b.subarray(0, bytesRead);
        continue;
      }
      await abortableDelay(pollMs, signal);
    }
  } finally {
    await fh.close();
  }
}

async function waitForFile(path: string, pollMs: number, signal?: AbortSignal): Promise<FileHandle> {
  for (;;) {
    if (signal?.aborted) throw signal.reason;
    try {
      return await open(path, "r");
    } catch {
      await abortableDelay(pollMs, signal);
    }
  }
}

function abortableDelay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
