/**
 * Where PID 1 keeps its state. The agent's state folder (config, identity, ...) is STATE_DIR:
 *   - maintenance (no installed disk): a folder on the /system tmpfs — nothing survives a reboot, as in Talos;
 *   - installed: the STATE partition (ext4, built into the kernel) mounted there, and EPHEMERAL (xfs) on /var.
 * The bulky parts of the state folder (etcd data, containerd, logs, pulled images, unpacked installers) are
 * symlinks into /var/lib/machined, so they land on EPHEMERAL (or tmpfs), never on the 100 MiB STATE.
 * After the first install, `adoptState` mounts the new STATE over the tmpfs folder and carries its files over,
 * so the config the apply is about to write lands on disk.
 */
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { partitionDevicePath, partitionFor, readLayout } from "../boot/layout.js";
import { discoverDisks } from "../host/disks.js";
import type { ModuleLoader } from "../host/modules.js";
import { MNT, MS, type Syscalls } from "../host/syscalls.js";

export const STATE_DIR = "/system/state";
export const VAR_STATE = "/var/lib/machined";
/** Entries of the state folder that live on /var (EPHEMERAL). */
export const BULKY = ["etcd", "containerd", "logs", "images", "installer"];

export interface StateMountOptions {
  sys: Pick<Syscalls, "mount" | "umount">;
  modules?: Pick<ModuleLoader, "load">;
  log?: (m: string) => void;
}

/** The installed system disk (our GPT layout on a block device), or undefined. */
export async function findSystemDisk(): Promise<string | undefined> {
  for (const d of await discoverDisks()) {
    if (d.readonly || d.cdrom) continue;
    const layout = await readLayout(d.devPath).catch(() => undefined);
    if (layout?.machined) return d.devPath;
  }
  return undefined;
}

async function partitionPaths(dev: string): Promise<{ state?: string; ephemeral?: string }> {
  const layout = await readLayout(dev);
  const path = (role: "state" | "ephemeral") => {
    try {
      return partitionDevicePath(dev, partitionFor(layout.partitions, role).index);
    } catch {
      return undefined;
    }
  };
  return { state: path("state"), ephemeral: path("ephemeral") };
}

/** Points the bulky entries of `dir` at /var/lib/machined (idempotent; existing real entries stay). */
export function linkBulky(dir: string): void {
  for (const name of BULKY) {
    const target = join(VAR_STATE, name);
    mkdirSync(target, { recursive: true });
    const at = join(dir, name);
    if (existsSync(at) || isLink(at)) continue;
    symlinkSync(target, at);
  }
}

const isLink = (p: string) => {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
};

/** The Debian generic kernel builds ext4 and xfs as modules; loading is a no-op when built in or loaded. */
function loadFs(o: StateMountOptions, fs: "ext4" | "xfs"): void {
  // ext4 asks the crypto API for crc32c at mount time (request_module, and there is no modprobe): load it first
  o.modules?.load(["crc32c_generic", "crc32c_intel"]);
  const r = o.modules?.load([fs]);
  if (r?.failed.length) o.log?.(`state: module ${fs}: ${r.failed.map((f) => f.error).join("; ")}`);
}

/** Boot: mounts an installed disk's STATE (and EPHEMERAL); returns the disk, or undefined for maintenance. */
export async function mountSystemDisk(o: StateMountOptions): Promise<string | undefined> {
  const log = o.log ?? (() => {});
  mkdirSync(STATE_DIR, { recursive: true, mode: 0o700 });
  let disk: string | undefined;
  try {
    disk = await findSystemDisk();
  } catch (err) {
    log(`state: looking for the system disk failed: ${(err as Error).message}`);
  }
  if (disk) {
    const parts = await partitionPaths(disk);
    if (parts.ephemeral) {
      try {
        loadFs(o, "xfs");
        o.sys.mount(parts.ephemeral, "/var", "xfs", MS.NOSUID | MS.NODEV, null);
        log(`state: EPHEMERAL ${parts.ephemeral} on /var`);
      } catch (err) {
        log(`state: EPHEMERAL ${parts.ephemeral} not mounted (${(err as Error).message}); /var stays on tmpfs`);
      }
    }
    if (parts.state) {
      try {
        loadFs(o, "ext4");
        o.sys.mount(parts.state, STATE_DIR, "ext4", MS.NOSUID | MS.NODEV, null);
      } catch (err) {
        log(`state: STATE ${parts.state} not mounted (${(err as Error).message}); maintenance state on tmpfs`);
        disk = undefined;
      }
    }
  }
  linkBulky(STATE_DIR);
  return disk;
}

/**
 * After a first install: STATE of `disk` is mounted over STATE_DIR with the tmpfs folder's files copied in
 * (identity, and whatever the maintenance node wrote). Returns false when the disk has no STATE.
 */
export async function adoptState(disk: string, o: StateMountOptions): Promise<boolean> {
  const { state } = await partitionPaths(disk);
  if (!state) return false;
  const staging = "/system/state.new";
  mkdirSync(staging, { recursive: true, mode: 0o700 });
  loadFs(o, "ext4");
  o.sys.mount(state, staging, "ext4", MS.NOSUID | MS.NODEV, null);
  for (const name of readdirSync(STATE_DIR)) {
    if (BULKY.includes(name)) continue;
    cpSync(join(STATE_DIR, name), join(staging, name), { recursive: true, force: true, verbatimSymlinks: true });
  }
  linkBulky(staging);
  o.sys.mount(staging, STATE_DIR, null, MS.MOVE, null);
  o.log?.(`state: STATE ${state} of ${disk} now holds ${STATE_DIR}`);
  return true;
}

/**
 * Before reboot/power-off (services already stopped): unmounts STATE and EPHEMERAL so the next boot finds clean
 * filesystems (no journal replay). A mount still busy is remounted read-only instead (that flushes and marks it
 * clean as well); failing that it is detached and left to the final sync.
 */
export function unmountSystemDisk(o: StateMountOptions, mounted: readonly string[] = [STATE_DIR, "/var"]): void {
  const log = o.log ?? (() => {});
  for (const target of mounted) {
    try {
      o.sys.umount(target);
      log(`state: unmounted ${target}`);
      continue;
    } catch (err) {
      if ((err as { code?: string }).code === "EINVAL") continue; // not a mount point (maintenance: tmpfs folder)
      log(`state: umount ${target}: ${(err as Error).message}; remounting read-only`);
    }
    try {
      o.sys.mount("none", target, null, MS.REMOUNT | MS.RDONLY, null);
    } catch (err) {
      log(`state: read-only remount of ${target} failed (${(err as Error).message}); detaching it`);
      try {
        o.sys.umount(target, MNT.DETACH);
      } catch {
        // nothing more to do: sync still runs
      }
    }
  }
}
