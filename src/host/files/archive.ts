/**
 * A .tar.gz of a file tree, as upstream's archiver.TarGz builds it for Copy: the walk skips the root folder,
 * names are relative to it (a file root is archived under its base name), and an entry that cannot be read is
 * left out with a "skipping" note instead of failing the archive. The notes come back in `errors` once the
 * stream has ended (upstream sends them as the last message's metadata error).
 *
 * Pseudo-files need care: /proc and cgroup files report size 0 but have content, so up to 4 KiB is read to
 * learn it; a read that answers EINVAL (files the kernel does not let anyone read, e.g. blkio.reset_stats)
 * gives an empty entry, as upstream. Small files are read whole before their header is written, so a file
 * that shrinks, grows or fails half-way never leaves a header that lies about its size; large files are
 * streamed, and padded or cut to the size announced so the archive stays well-formed.
 */
import { Readable, pipeline } from "node:stream";
import { createGzip } from "node:zlib";
import { tarHeader, tarPadding, tarTrailer } from "../../machinery/archive/tar.js";
import { errorCode, type Files, type FileStat } from "./types.js";
import { goErrorText } from "./errors.js";
import { walk, type WalkEntry } from "./walk.js";

const PROBE = 4096;
/** Files up to this size are read whole before their header goes out. */
const WHOLE_MAX = 1 << 20;
const CHUNK = 64 * 1024;

export interface TarGz {
  /** Gzip-compressed tar bytes. Errors of the walk itself never surface here, only `errors` notes. */
  chunks: AsyncIterable<Buffer>;
  /** "skipping \"/path\": reason" per entry left out; complete once `chunks` has ended. */
  errors: string[];
}

/** Resolves once the root is known to exist (its lstat error rejects, for the caller to map). */
export async function tarGz(files: Files, root: string, opts: { signal?: AbortSignal } = {}): Promise<TarGz> {
  const entries = await walk(files, root, { skipRoot: true, signal: opts.signal });
  const errors: string[] = [];
  const tar = Readable.from(tarStream(files, entries, errors, opts.signal), { objectMode: false });
  const gz = createGzip();
  // pipeline forwards an error (or an early destroy by the consumer) to both ends: no dangling pump
  pipeline(tar, gz, () => {});
  return { chunks: gz, errors };
}

async function* tarStream(files: Files, entries: AsyncIterable<WalkEntry>, errors: string[], signal?: AbortSignal): AsyncGenerator<Buffer> {
  const skip = (p: string, why: string) => errors.push(`skipping ${JSON.stringify(p)}: ${why}`);
  for await (const e of entries) {
    if (signal?.aborted) return;
    if (e.error !== undefined || !e.stat) {
      skip(e.path, e.error ?? "unknown error");
      continue;
    }
    const st = e.stat;
    const base = { name: e.rel, mode: st.mode, mtime: st.mtime, uid: st.uid, gid: st.gid };
    if (st.isDirectory()) yield tarHeader({ ...base, type: "dir" });
    else if (st.isSymbolicLink()) yield tarHeader({ ...base, type: "symlink", linkName: e.link });
    else if (st.isFile()) yield* fileEntry(files, e.path, st, base, skip);
    else if (st.isSocket()) skip(e.path, "archive/tar: sockets not supported");
    // devices and FIFOs carry no data; the tar writer has no header for them, so they are left out
  }
  yield tarTrailer();
}

type Base = { name: string; mode: number; mtime: Date; uid: number; gid: number };

async function* fileEntry(files: Files, p: string, st: FileStat, base: Base, skip: (p: string, why: string) => void): AsyncGenerator<Buffer> {
  let fh;
  try {
    fh = await files.open(p, "r");
  } catch (err) {
    skip(p, goErrorText(err, p));
    return;
  }
  try {
    const declared = st.size;
    if (declared === 0 || declared <= WHOLE_MAX) {
      let data: Buffer;
      try {
        data = await readUpTo(fh, declared === 0 ? PROBE : WHOLE_MAX + 1);
      } catch (err) {
        if (errorCode(err) !== "EINVAL") {
          skip(p, goErrorText(err, p));
          return;
        }
        data = Buffer.alloc(0);
      }
      // a size-0 file with a full probe (or a small file that grew past the limit) is copied empty, as upstream
      if ((declared === 0 && data.length >= PROBE) || data.length > WHOLE_MAX) data = Buffer.alloc(0);
      yield tarHeader({ ...base, type: "file", size: data.length });
      if (data.length > 0) yield data;
      yield tarPadding(data.length);
      return;
    }
    yield tarHeader({ ...base, type: "file", size: declared });
    let done = 0;
    try {
      while (done < declared) {
        const buf = Buffer.alloc(Math.min(CHUNK, declared - done));
        const { bytesRead } = await fh.read(buf, 0, buf.length, done);
        if (bytesRead === 0) break;
        done += bytesRead;
        yield buf.subarray(0, bytesRead);
      }
      if (done < declared) skip(p, `file shrank from ${declared} to ${done} bytes while being archived`);
    } catch (err) {
      skip(p, goErrorText(err, p));
    }
    if (done < declared) yield Buffer.alloc(declared - done);
    yield tarPadding(declared);
  } finally {
    await fh.close().catch(() => {});
  }
}

/** Sequential reads (pseudo-files may not support positional ones) until EOF or `max` bytes. */
async function readUpTo(fh: { read(b: Uint8Array, o: number, l: number, p: number | null): Promise<{ bytesRead: number }> }, max: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let n = 0;
  while (n < max) {
    const buf = Buffer.allocUnsafe(Math.min(CHUNK, max - n));
    const { bytesRead } = await fh.read(buf, 0, buf.length, null);
    if (bytesRead === 0) break;
    parts.push(buf.subarray(0, bytesRead));
    n += bytesRead;
  }
  return Buffer.concat(parts, n);
}
