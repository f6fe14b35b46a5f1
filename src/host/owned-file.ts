/**
 * Files handed to another user (the control plane's secrets and configs, read by pods running as 65534...):
 * written atomically (temporary file, owner and mode set on it, fsync, rename, folder fsync) so a reader never sees
 * a half-written or wrongly owned file. Ownership is only given where this process may give it (root); elsewhere
 * (tests as a user) the file stays ours. A file that already has the wanted bytes, mode and owner is left alone,
 * so readers watching it see no change.
 */
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import * as path from "node:path";

export interface FileOwner {
  uid: number;
  gid: number;
}

/** Whether this process may chown files to another user. */
export function canChown(): boolean {
  return process.getuid?.() === 0;
}

/** Returns true when the file was (re)written. */
export async function writeOwnedFile(target: string, data: string | Uint8Array, mode: number, owner?: FileOwner): Promise<boolean> {
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data);
  const chown = owner !== undefined && canChown();
  if (await unchanged(target, bytes, mode, chown ? owner : undefined)) return false;
  const dir = path.dirname(target);
  await fs.mkdir(dir, { recursive: true, mode: 0o755 });
  const tmp = path.join(dir, `.${path.basename(target)}.${randomBytes(6).toString("hex")}.tmp`);
  const fh = await fs.open(tmp, "wx", mode);
  try {
    await fh.writeFile(bytes);
    // open() applies the umask; the mode must be exact.
    await fh.chmod(mode);
    if (chown) await fh.chown(owner.uid, owner.gid);
    await fh.sync();
  } catch (err) {
    await fh.close();
    await fs.rm(tmp, { force: true });
    throw err;
  }
  await fh.close();
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
  return true;
}

async function unchanged(target: string, bytes: Buffer, mode: number, owner: FileOwner | undefined): Promise<boolean> {
  try {
    const st = await fs.stat(target);
    if ((st.mode & 0o7777) !== mode) return false;
    if (owner && (st.uid !== owner.uid || st.gid !== owner.gid)) return false;
    return bytes.equals(await fs.readFile(target));
  } catch {
    return false;
  }
}

/** Creates a folder (and its parents) with `mode`. */
export async function ensureDir(dir: string, mode = 0o755): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode });
}

/** A folder with exactly this mode (and owner, where we may give it), created with its parents if missing. */
export async function ensureOwnedDir(target: string, mode: number, owner?: FileOwner): Promise<void> {
  await fs.mkdir(target, { recursive: true, mode });
  await fs.chmod(target, mode);
  if (owner && canChown()) await fs.chown(target, owner.uid, owner.gid);
}
