/**
 * Crash-safe file replacement, the one way every writer in machined replaces a file (config store, node
 * identity, etc files, static pods, the system-disk record, etcd recovery uploads, image cache blobs): write a
 * temporary file in the same folder, fsync it, rename it over the target, then fsync the folder so the rename
 * itself is durable. A reader (or a reboot) sees either the old bytes or the new bytes, never a truncated file.
 * A failure at any step (including a source stream that throws, e.g. a digest check) removes the temporary.
 */
import * as path from "node:path";
import { randomBytes } from "node:crypto";
import type { Files } from "./types.js";

export type AtomicData = Uint8Array | string | AsyncIterable<Uint8Array>;

/** `.<name>.<random>.tmp` beside the target: hidden, and recognisable by cleanupTemporaries. */
function tempName(target: string): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.${randomBytes(6).toString("hex")}.tmp`);
}

export async function writeFileAtomic(files: Files, target: string, data: AtomicData, mode = 0o600): Promise<void> {
  const dir = path.dirname(target);
  await files.mkdir(dir, { recursive: true });
  const tmp = tempName(target);
  const fh = await files.open(tmp, "wx", mode);
  try {
    try {
      if (typeof data === "string" || data instanceof Uint8Array) {
        await writeAll(fh, typeof data === "string" ? Buffer.from(data) : data);
      } else {
        for await (const chunk of data) await writeAll(fh, chunk);
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
    await files.rename(tmp, target);
  } catch (err) {
    await files.rm(tmp, { force: true }).catch(() => {});
    throw err;
  }
  const dh = await files.open(dir, "r");
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}

/** Writes every byte of `data` at the handle's current offset (a single write may be partial). */
export async function writeAll(fh: { write(d: Uint8Array, o?: number, l?: number, p?: number | null): Promise<{ bytesWritten: number }> }, data: Uint8Array): Promise<void> {
  for (let done = 0; done < data.length; ) {
    const { bytesWritten } = await fh.write(data, done, data.length - done, null);
    done += bytesWritten;
  }
}

/** Remove temporaries left by a write that was interrupted (they never replace the target). */
export async function cleanupTemporaries(files: Files, target: string): Promise<void> {
  const dir = path.dirname(target);
  const prefix = `.${path.basename(target)}.`;
  let names: string[] = [];
  try {
    names = await files.readdir(dir);
  } catch {
    return;
  }
  await Promise.all(names.filter((n) => n.startsWith(prefix) && n.endsWith(".tmp")).map((n) => files.rm(path.join(dir, n), { force: true })));
}
