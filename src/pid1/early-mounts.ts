/**
 * The pseudo filesystems PID 1 mounts before anything else (the kernel hands init a bare rootfs).
 * Order matters: /proc first (mountinfo lives there), /dev before /dev/pts and /dev/shm, /sys before cgroup2.
 */
import { ensureMounts, nodeMountFs, type MountFs, type MountOutcome, type MountSpec } from "../host/mounts.js";
import { MS, type Syscalls } from "../host/syscalls.js";

const { NOSUID, NODEV, NOEXEC, RELATIME } = MS;

export const EARLY_MOUNTS: readonly MountSpec[] = [
  { source: "proc", target: "/proc", fstype: "proc", flags: NOSUID | NODEV | NOEXEC, data: null, mode: 0o555 },
  { source: "sysfs", target: "/sys", fstype: "sysfs", flags: NOSUID | NODEV | NOEXEC, data: null, mode: 0o555 },
  // devtmpfs: the kernel creates device nodes itself, so no udev is needed to find disks and consoles.
  { source: "devtmpfs", target: "/dev", fstype: "devtmpfs", flags: NOSUID, data: "mode=0755" },
  // gid 5 is "tty"; ptmxmode=000 because /dev/ptmx from devtmpfs is the node that is actually used.
  { source: "devpts", target: "/dev/pts", fstype: "devpts", flags: NOSUID | NOEXEC, data: "gid=5,mode=620,ptmxmode=000" },
  { source: "tmpfs", target: "/dev/shm", fstype: "tmpfs", flags: NOSUID | NODEV, data: "mode=1777" },
  { source: "tmpfs", target: "/run", fstype: "tmpfs", flags: NOSUID | NODEV, data: "mode=0755" },
  { source: "tmpfs", target: "/tmp", fstype: "tmpfs", flags: NOSUID | NODEV, data: "mode=1777" },
  // nsdelegate: containers may manage their own sub-hierarchy; memory_recursiveprot: what kubelet/systemd expect.
  {
    source: "cgroup2",
    target: "/sys/fs/cgroup",
    fstype: "cgroup2",
    flags: NOSUID | NODEV | NOEXEC | RELATIME,
    data: "nsdelegate,memory_recursiveprot",
  },
];

export class EarlyMountError extends Error {
  constructor(readonly outcomes: MountOutcome[]) {
    const failed = outcomes.filter((o) => o.action === "failed");
    super(`early mounts failed: ${failed.map((o) => `${o.target} (${o.fstype}): ${o.error?.message}`).join("; ")}`);
    this.name = "EarlyMountError";
  }
}

export interface EarlyMountOptions {
  sys: Pick<Syscalls, "mount" | "getpid">;
  fs?: MountFs;
  specs?: readonly MountSpec[];
}

/**
 * Mounts the early filesystems when running as PID 1; in local mode the host already has them and this
 * returns [] without touching anything. Throws EarlyMountError (after trying every mount) if any failed.
 */
export function earlyMounts(opts: EarlyMountOptions): MountOutcome[] {
  if (opts.sys.getpid() !== 1) return [];
  const outcomes = ensureMounts(opts.sys, opts.specs ?? EARLY_MOUNTS, opts.fs ?? nodeMountFs);
  if (outcomes.some((o) => o.action === "failed")) throw new EarlyMountError(outcomes);
  return outcomes;
}
