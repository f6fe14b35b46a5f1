/**
 * From the early initramfs to rootfs.sqsh (docs/image.md "What `machined init` must do", steps 2–4): stage
 * modules, loop-mount the squashfs read-only on /sysroot, bind the stage's node binary and agent over their
 * stubs, move the pseudo filesystems, then MS_MOVE + chroot (switch_root without deleting the old root: the
 * initramfs is a few tmpfs pages once the big files are gone, and Node keeps running from the bound copy).
 */
import { closeSync, existsSync } from "node:fs";
import { attachLoopReadOnly } from "../host/loop.js";
import { ModuleLoader } from "../host/modules.js";
import { MS, type Syscalls } from "../host/syscalls.js";

export interface SwitchRootOptions {
  sys: Syscalls;
  cmdline: string;
  image?: string;
  newRoot?: string;
  log?: (msg: string) => void;
}

export const STAGE_MODULES = ["loop", "squashfs", "overlay"];
/** The stage's copies that replace the empty stubs in rootfs.sqsh. */
export const STAGE_BINDS = ["/usr/bin/node", "/usr/lib/machined"];
/** Mounted by earlyMounts in the initramfs and carried into the new root. */
export const MOVED_MOUNTS = ["/dev", "/proc", "/sys", "/run", "/tmp"];

/** True when we are PID 1 in the early initramfs (it carries the squashfs; the real root does not). */
export function inInitramfs(image = "/rootfs.sqsh"): boolean {
  return existsSync(image);
}

export function switchRoot(o: SwitchRootOptions): { loop: string } {
  const log = o.log ?? (() => {});
  const image = o.image ?? "/rootfs.sqsh";
  const root = o.newRoot ?? "/sysroot";
  const r = new ModuleLoader({ sys: o.sys, cmdline: o.cmdline }).load(STAGE_MODULES);
  log(`stage modules: loaded [${r.loaded.join(" ")}]${r.failed.length ? ` failed [${r.failed.map((f) => `${f.name}: ${f.error}`).join("; ")}]` : ""}`);
  const loop = attachLoopReadOnly(o.sys, image);
  try {
    o.sys.mount(loop.device, root, "squashfs", MS.RDONLY, null);
  } finally {
    closeSync(loop.fd); // autoclear: from now on the mount holds the device
  }
  for (const p of STAGE_BINDS) o.sys.mount(p, `${root}${p}`, null, MS.BIND, null);
  for (const m of MOVED_MOUNTS) o.sys.mount(m, `${root}${m}`, null, MS.MOVE, null);
  process.chdir(root);
  o.sys.mount(".", "/", null, MS.MOVE, null);
  o.sys.chroot(".");
  process.chdir("/");
  return { loop: loop.device };
}
