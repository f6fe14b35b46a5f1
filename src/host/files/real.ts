/** The machine's own filesystem behind the Files interface (node:fs, unchanged semantics). */
import { constants as fsc, createReadStream, promises as fs } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Files, FileHandle, OpenFlags, ReadStreamOptions, WriteOptions } from "./types.js";

async function* readStream(path: string, opts: ReadStreamOptions = {}): AsyncGenerator<Buffer> {
  const stream = createReadStream(path, { highWaterMark: opts.chunkSize ?? 64 * 1024 });
  const onAbort = () => stream.destroy();
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for await (const chunk of stream) yield chunk as Buffer;
  } finally {
    opts.signal?.removeEventListener("abort", onAbort);
    stream.destroy();
  }
}

const ok = (p: Promise<unknown>) =>
  p.then(
    () => true,
    () => false,
  );

function readFile(path: string): Promise<Buffer>;
function readFile(path: string, encoding: "utf8"): Promise<string>;
function readFile(path: string, encoding?: "utf8"): Promise<Buffer | string> {
  return encoding ? fs.readFile(path, encoding) : fs.readFile(path);
}

export const hostFiles: Files = {
  readFile,
  writeFile: (path: string, data: Uint8Array | string, opts: WriteOptions = {}) => fs.writeFile(path, data, { mode: opts.mode, flag: opts.flag }),
  stat: (path) => fs.stat(path),
  lstat: (path) => fs.lstat(path),
  readdir: (path) => fs.readdir(path),
  entries: (path) => fs.readdir(path, { withFileTypes: true }),
  readlink: (path) => fs.readlink(path),
  realpath: (path) => fs.realpath(path),
  mkdir: async (path, opts = {}) => {
    await fs.mkdir(path, opts);
  },
  rm: (path, opts) => fs.rm(path, opts),
  rename: (from, to) => fs.rename(from, to),
  copyFile: (from, to) => fs.copyFile(from, to),
  truncate: (path, length) => fs.truncate(path, length),
  exists: (path) => ok(fs.access(path)),
  isExecutable: (path) => ok(fs.access(path, fsc.X_OK)),
  tempDir: (prefix) => fs.mkdtemp(join(tmpdir(), prefix)),
  statfs: async (path) => {
    const s = await fs.statfs(path);
    return { blocks: Number(s.blocks), bsize: Number(s.bsize) };
  },
  open: (path: string, flags: OpenFlags, mode?: number): Promise<FileHandle> => fs.open(path, flags, mode),
  readStream,
};
