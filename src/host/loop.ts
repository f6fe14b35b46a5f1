/**
 * Loop devices without losetup: LOOP_CTL_GET_FREE + LOOP_CONFIGURE (Linux ≥ 5.8), which is what `losetup -r`
 * does. PID 1 uses it once per boot, to mount /rootfs.sqsh from the initramfs read-only.
 */
import { closeSync, openSync, constants as fsc } from "node:fs";
import type { Syscalls } from "./syscalls.js";

const LOOP_CTL_GET_FREE = 0x4c82;
const LOOP_CONFIGURE = 0x4c0a;
export const LO_FLAGS = { READ_ONLY: 1, AUTOCLEAR: 4 } as const;

export interface LoopFs {
  open(path: string, flags: number): number;
  close(fd: number): void;
}

const nodeLoopFs: LoopFs = { open: (p, f) => openSync(p, f), close: (fd) => closeSync(fd) };

export interface AttachedLoop {
  /** /dev/loopN */
  device: string;
  /**
   * The open loop fd. With autoclear the device detaches on the last close, so close it only once the
   * device is mounted (the mount then holds it).
   */
  fd: number;
}

/** `struct loop_config { u32 fd; u32 block_size; struct loop_info64 info; u64 reserved[8]; }` (304 bytes). */
export function loopConfig(backingFd: number, flags: number): Buffer {
  const cfg = Buffer.alloc(4 + 4 + 232 + 64);
  cfg.writeUInt32LE(backingFd, 0);
  cfg.writeUInt32LE(flags, 8 + 52); // info.lo_flags: loop_info64 has 52 bytes before it (u64×6, u32×3)
  return cfg;
}

/** Attaches `file` to a free loop device, read-only with autoclear. */
export function attachLoopReadOnly(sys: Pick<Syscalls, "ioctl">, file: string, fs: LoopFs = nodeLoopFs, devRoot = "/dev"): AttachedLoop {
  const ctl = fs.open(`${devRoot}/loop-control`, fsc.O_RDWR);
  let n: number;
  try {
    n = sys.ioctl(ctl, LOOP_CTL_GET_FREE, 0);
  } finally {
    fs.close(ctl);
  }
  const device = `${devRoot}/loop${n}`;
  const backing = fs.open(file, fsc.O_RDONLY);
  try {
    const fd = fs.open(device, fsc.O_RDONLY);
    try {
      sys.ioctl(fd, LOOP_CONFIGURE, loopConfig(backing, LO_FLAGS.READ_ONLY | LO_FLAGS.AUTOCLEAR));
    } catch (err) {
      fs.close(fd);
      throw err;
    }
    return { device, fd };
  } finally {
    fs.close(backing); // the loop device holds its own reference to the file
  }
}
