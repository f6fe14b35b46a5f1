/**
 * Extracts chosen files from a tar stream (plain or gzip), such as an OCI image layer. Our own reader rather
 * than tar(1): the OS image ships no tar, and an installer layer only needs regular files. Understands ustar
 * (name + prefix), GNU long names ('L') and PAX path/size records, which is what umoci, buildkit and Go write.
 */
import { createGunzip } from "node:zlib";
import { Readable } from "node:stream";
import { dirname } from "node:path";
import { hostFiles, writeAll, type Files } from "../../host/files/index.js";

const BLOCK = 512;

/** Pulls exact byte counts out of a chunk stream. */
class ByteReader {
  private buf: Buffer = Buffer.alloc(0);
  private readonly it: AsyncIterator<Buffer>;
  private ended = false;

  constructor(src: AsyncIterable<Buffer>) {
    this.it = src[Symbol.asyncIterator]();
  }

  private async more(): Promise<boolean> {
    if (this.ended) return false;
    const r = await this.it.next();
    if (r.done) {
      this.ended = true;
      return false;
    }
    this.buf = this.buf.length === 0 ? r.value : Buffer.concat([this.buf, r.value]);
    return true;
  }

  /** Exactly n bytes, or undefined at a clean end of stream. */
  async read(n: number): Promise<Buffer | undefined> {
    while (this.buf.length < n) if (!(await this.more())) return undefined;
    const out = Buffer.from(this.buf.subarray(0, n));
    this.buf = this.buf.subarray(n);
    return out;
  }

  /** Reads to the end: a digest check wrapped around the source only runs once the source is exhausted. */
  async drain(): Promise<void> {
    this.buf = Buffer.alloc(0);
    while (await this.more()) this.buf = Buffer.alloc(0);
  }

  /** Passes n bytes to `sink` chunk by chunk (or drops them), without holding them all in memory. */
  async forward(n: number, sink?: (b: Buffer) => Promise<void>, mayEnd = false): Promise<void> {
    let left = n;
    while (left > 0) {
      if (this.buf.length === 0 && !(await this.more())) {
        if (mayEnd) return;
        throw new Error(`tar stream ends ${left} bytes early`);
      }
      const take = Math.min(left, this.buf.length);
      const part = this.buf.subarray(0, take);
      this.buf = this.buf.subarray(take);
      left -= take;
      if (sink) await sink(part);
    }
  }
}

/** gzip is sniffed by its magic, so a layer works whatever media type the registry claims. */
export async function* decompressed(src: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const it = src[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done) return;
  const head = Buffer.from(first.value);
  const rest = (async function* () {
    yield head;
    for (;;) {
      const r = await it.next();
      if (r.done) return;
      yield r.value;
    }
  })();
  if (head.length >= 4 && head.readUInt32LE(0) === 0xfd2fb528) {
    throw new Error("the layer is zstd-compressed; only gzip and uncompressed layers are supported");
  }
  if (head[0] !== 0x1f || head[1] !== 0x8b) {
    yield* rest;
    return;
  }
  const gunzip = createGunzip();
  const input = Readable.from(rest);
  input.on("error", (err) => gunzip.destroy(err));
  input.pipe(gunzip);
  for await (const chunk of gunzip) yield chunk as Buffer;
}

function cString(b: Buffer, start: number, len: number): string {
  const s = b.subarray(start, start + len);
  const end = s.indexOf(0);
  return s.subarray(0, end < 0 ? s.length : end).toString("utf8");
}

function octalField(b: Buffer, start: number, len: number): number {
  if (b[start] & 0x80) {
    // GNU base-256 for sizes >= 8 GiB
    let v = 0;
    for (let i = start + 1; i < start + len; i++) v = v * 256 + b[i];
    return v;
  }
  const s = cString(b, start, len).trim();
  return s === "" ? 0 : parseInt(s, 8);
}

function paxRecords(data: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let off = 0;
  while (off < data.length) {
    const sp = data.indexOf(0x20, off);
    if (sp < 0) break;
    const len = Number(data.subarray(off, sp).toString());
    if (!Number.isInteger(len) || len <= 0) break;
    const rec = data.subarray(sp + 1, off + len - 1).toString("utf8");
    const eq = rec.indexOf("=");
    if (eq > 0) out[rec.slice(0, eq)] = rec.slice(eq + 1);
    off += len;
  }
  return out;
}

/** "./usr//x" → "usr/x"; undefined for names that climb out of the root. */
export function cleanTarName(name: string): string | undefined {
  const parts = name.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.some((p) => p === "..")) return undefined;
  return parts.join("/");
}

export interface TarExtractResult {
  /** Archive names of the files written. */
  written: string[];
  entries: number;
}

/**
 * Writes every regular file for which `pick(name)` returns a host path; everything else is skipped.
 * Later entries of the same name replace earlier ones, as when a layer is unpacked.
 */
export async function extractTar(src: AsyncIterable<Buffer>, pick: (name: string) => string | undefined, files: Files = hostFiles): Promise<TarExtractResult> {
  const r = new ByteReader(decompressed(src));
  const written: string[] = [];
  let entries = 0;
  let longName: string | undefined;
  let pax: Record<string, string> = {};
  for (;;) {
    const h = await r.read(BLOCK);
    if (!h || h.every((b) => b === 0)) {
      await r.drain(); // the end-of-archive blocks and padding; also lets a digest check see every byte
      break;
    }
    const type = String.fromCharCode(h[156] || 0x30);
    let size = octalField(h, 124, 12);
    const pad = (n: number) => (BLOCK - (n % BLOCK)) % BLOCK;
    if (type === "L" || type === "x" || type === "g") {
      const data = (await r.read(size + pad(size))) ?? Buffer.alloc(0);
      const body = data.subarray(0, size);
      if (type === "L") longName = cString(body, 0, body.length);
      if (type === "x") pax = paxRecords(body);
      continue;
    }
    entries++;
    const prefix = h.subarray(257, 262).toString() === "ustar" ? cString(h, 345, 155) : "";
    const raw = pax.path ?? longName ?? (prefix ? `${prefix}/${cString(h, 0, 100)}` : cString(h, 0, 100));
    if (pax.size !== undefined) size = Number(pax.size);
    longName = undefined;
    pax = {};
    const name = cleanTarName(raw);
    const dest = name !== undefined && (type === "0" || type === "7") ? pick(name) : undefined;
    if (!dest) {
      await r.forward(size);
      await r.forward(pad(size), undefined, true);
      continue;
    }
    await files.mkdir(dirname(dest), { recursive: true });
    const fh = await files.open(dest, "w", 0o644);
    try {
      await r.forward(size, async (b) => {
        await writeAll(fh, b);
      });
    } finally {
      await fh.close();
    }
    // umoci's layers end right after the last file's data (no padding, no end blocks); GNU tar accepts that too
    await r.forward(pad(size), undefined, true);
    written.push(name!);
  }
  return { written, entries };
}
