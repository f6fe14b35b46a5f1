/**
 * Crash-safe file replacement: write a temporary file in the same folder, fsync it, rename it over the
 * target, then fsync the folder so the rename itself is durable. A reader (or a reboot) sees either the
 * old bytes or the new bytes, never a truncated file.
 */
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { randomBytes } from "node:crypto";

export async function writeFileAtomic(target: string, data: Uint8Array | string, mode = 0o600): Promise<void> {
  const dir = path.dirname(target);
  await fs.mkdir(dir, { recursive: true });
  const tmp = path.join(dir, `.${path.basename(target)}.${randomBytes(6).toString("hex")}.tmp`);
  const fh = await fs.open(tmp, "wx", mode);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await fs.rename(tmp, target);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
  const dh = await fs.open(dir, "r");
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}

/** Remove temporaries left by a write that was interrupted (they never replace the target). */
export async function cleanupTemporaries(target: string): Promise<void> {
  const dir = path.dirname(target);
  const prefix = `.${path.basename(target)}.`;
  let names: string[] = [];
  try {
    names = await fs.readdir(dir);
  } catch {
    return;
  }
  await Promise.all(
    names.filter((n) => n.startsWith(prefix) && n.endsWith(".tmp")).map((n) => fs.rm(path.join(dir, n), { force: true })),
  );
}
