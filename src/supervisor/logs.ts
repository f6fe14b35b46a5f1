/**
 * Service logs: each service writes to a bounded in-memory ring (what the Logs RPC serves, tail then
 * follow) and to a size-rotated file under `<state>/logs/<id>.log` (what survives a restart of the agent).
 */
import { dirname, join } from "node:path";
import { Writable } from "node:stream";
import { hostFiles, type FileHandle, type Files } from "../host/files/index.js";

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

const SLAB = 64 * 1024;

/**
 * Bounded byte history kept in fixed 64 KiB slabs: an append is one copy, forgetting history is dropping
 * a slab (no per-write allocation, which matters for chatty services).
 */
export class ByteRing {
  private slabs: Buffer[] = [];
  private lastUsed = 0;
  private head = 0;
  /** History was dropped, so the oldest line may be partial. */
  private torn = false;

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.slabs.length === 0 ? 0 : (this.slabs.length - 1) * SLAB + this.lastUsed - this.head;
  }

  append(b: Buffer): void {
    let off = 0;
    while (off < b.length) {
      if (this.slabs.length === 0 || this.lastUsed === SLAB) {
        this.slabs.push(Buffer.allocUnsafe(SLAB));
        this.lastUsed = 0;
      }
      const n = b.copy(this.slabs[this.slabs.length - 1], this.lastUsed, off);
      this.lastUsed += n;
      off += n;
    }
    while (this.size > this.capacity) {
      const excess = this.size - this.capacity;
      const firstLen = (this.slabs.length === 1 ? this.lastUsed : SLAB) - this.head;
      if (excess >= firstLen && this.slabs.length > 1) {
        this.slabs.shift();
        this.head = 0;
      } else this.head += excess;
      this.torn = true;
    }
  }

  /** Up to n of the most recent bytes. */
  newest(n: number): Buffer {
    const out: Buffer[] = [];
    let need = n;
    for (let i = this.slabs.length - 1; i >= 0 && need > 0; i--) {
      const from = i === 0 ? this.head : 0;
      const to = i === this.slabs.length - 1 ? this.lastUsed : SLAB;
      const start = Math.max(from, to - need);
      out.unshift(this.slabs[i].subarray(start, to));
      need -= to - start;
    }
    return Buffer.concat(out);
  }

  /** Everything kept, starting at a line boundary. */
  contents(): Buffer {
    const views = this.slabs.map((s, i) => s.subarray(i === 0 ? this.head : 0, i === this.slabs.length - 1 ? this.lastUsed : SLAB));
    const all = Buffer.concat(views, this.size);
    if (!this.torn) return all;
    const nl = all.indexOf(NL);
    return nl < 0 ? Buffer.alloc(0) : all.subarray(nl + 1);
  }
}

export class ServiceLog {
  private readonly ring: ByteRing;
  private followers = new Set<(b: Buffer) => void>();
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
    private readonly files: Files = hostFiles,
  ) {
    this.ring = new ByteRing(settings.ringBytes);
  }

  write(data: Buffer | string): void {
    if (this.closed) return;
    const b = typeof data === "string" ? Buffer.from(data) : data;
    if (b.length === 0) return;
    this.ring.append(b);
    for (const f of this.followers) f(b);
    if (this.filePath && !this.fileBroken) {
      this.pending.push(b);
      this.writing ??= this.drain();
    }
  }

  /** The last non-empty line written, for error messages ("last log ..."). */
  lastLine(): string {
    // Computed on demand (only failures need it) from the newest bytes of the ring.
    const text = this.ring.newest(4096).toString("utf8").trimEnd();
    return text.slice(text.lastIndexOf("\n") + 1).slice(-512);
  }

  /** The ring's content, trimmed to lines. */
  tail(lines = -1): Buffer {
    return tailLines(this.ring.contents(), lines);
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
      // the folder is made on the first write (not when the manager is built, which cannot wait for it)
      await this.files.mkdir(dirname(path), { recursive: true });
      this.fileSize = await this.files.stat(path).then(
        (st) => st.size,
        () => 0,
      );
    }
    if (this.fileSize > 0 && this.fileSize + buf.length > this.settings.fileMaxBytes) {
      await this.fh?.close();
      this.fh = null;
      await rotate(this.files, path, this.settings.keepFiles);
      this.fileSize = 0;
    }
    this.fh ??= await this.files.open(path, "a", 0o600);
    await this.fh.write(buf);
    this.fileSize += buf.length;
  }
}

async function rotate(files: Files, path: string, keep: number): Promise<void> {
  if (keep <= 0) {
    await files.rm(path, { force: true });
    return;
  }
  await files.rm(`${path}.${keep}`, { force: true });
  for (let i = keep - 1; i >= 1; i--) {
    try {
      await files.rename(`${path}.${i}`, `${path}.${i + 1}`);
    } catch {
      // gap in the sequence
    }
  }
  await files.rename(path, `${path}.1`);
}

/** All service logs of one agent; logs are created on first use, like upstream's logging manager. */
export class LogManager {
  private logs = new Map<string, ServiceLog>();
  readonly settings: LogSettings;

  /** dir: folder for <id>.log files (e.g. `<state>/logs`); null keeps logs in memory only. */
  constructor(
    readonly dir: string | null,
    settings: Partial<LogSettings> = {},
    private readonly files: Files = hostFiles,
  ) {
    this.settings = { ...defaultLogSettings, ...settings };
  }

  get(id: string): ServiceLog {
    let l = this.logs.get(id);
    if (!l) {
      l = new ServiceLog(id, this.settings, this.dir ? join(this.dir, `${id}.log`) : null, this.files);
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
export async function* followFile(path: string, opts: LogReadOptions & { pollMs?: number; files?: Files } = {}): AsyncGenerator<Buffer> {
  const { tailLines: n = -1, follow = false, signal, pollMs = 200, files = hostFiles } = opts;
  let fh: FileHandle;
  try {
    fh = await files.open(path, "r");
  } catch {
    if (!follow) return;
    fh = await waitForFile(files, path, pollMs, signal);
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

async function waitForFile(files: Files, path: string, pollMs: number, signal?: AbortSignal): Promise<FileHandle> {
  for (;;) {
    if (signal?.aborted) throw signal.reason;
    try {
      return await files.open(path, "r");
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
