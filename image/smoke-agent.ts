/**
 * Stand-in for dist/machined.mjs used by `make image AGENT=smoke` and `make qemu-smoke` until the real agent's
 * PID-1 mode exists. It walks the boot contract of docs/image.md with the project's own host code so the image
 * is proven end to end: early mounts -> stage modules -> loop-mount /rootfs.sqsh read-only -> switch root ->
 * coldplug from the full module set -> network (ip from rootfs.sqsh) -> TCP listener on :50000.
 * Built by image/smoke-agent.sh into /tmp (never into dist/). Not part of the product.
 */
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync, constants as fsc } from "node:fs";
import { createServer } from "node:net";
import { createRequire } from "node:module";
import { release } from "node:os";
import { earlyMounts } from "../src/pid1/early-mounts.js";
import { ModuleLoader } from "../src/host/modules.js";
import { MS, realSyscalls } from "../src/host/syscalls.js";

const MS_MOVE = 0x2000;
const t0 = Date.now();
const uptime = () => {
  try {
    return readFileSync("/proc/uptime", "utf8").split(" ")[0];
  } catch {
    return "?";
  }
};
const log = (msg: string) => process.stdout.write(`[machined-smoke +${Date.now() - t0}ms up=${uptime()}s] ${msg}\n`);

// ioctl and chroot are not in the Syscalls interface yet; bind them here the same way src/host/native does.
type Fn = (...a: unknown[]) => number;
const koffi = createRequire(import.meta.url)("koffi") as {
  load(p: string | null): { func(decl: string): Fn };
  errno(): number;
};
const libc = koffi.load(null);
const ioctl = libc.func("int ioctl(int fd, unsigned long req, void *arg)");
const ioctlInt = libc.func("int ioctl(int fd, unsigned long req, unsigned long arg)");
const chroot = libc.func("int chroot(const char *path)");
const check = (rc: number, what: string) => {
  if (rc < 0) throw new Error(`${what} failed: errno ${koffi.errno()}`);
  return rc;
};

/**
 * LOOP_CTL_GET_FREE + LOOP_CONFIGURE (read-only, autoclear) — what losetup -r does. Returns the device and its
 * open fd: with autoclear the device detaches on last close, so the caller closes the fd only after mounting.
 */
function attachLoop(file: string): { dev: string; fd: number } {
  const ctl = openSync("/dev/loop-control", fsc.O_RDWR);
  const n = check(ioctlInt(ctl, 0x4c82, 0), "LOOP_CTL_GET_FREE");
  closeSync(ctl);
  const dev = `/dev/loop${n}`;
  const backing = openSync(file, fsc.O_RDONLY);
  const loopFd = openSync(dev, fsc.O_RDONLY);
  // struct loop_config { u32 fd; u32 block_size; struct loop_info64 info (232 bytes); u64 reserved[8]; }
  const cfg = Buffer.alloc(4 + 4 + 232 + 64);
  cfg.writeUInt32LE(backing, 0);
  cfg.writeUInt32LE(1 | 4, 8 + 52); // info.lo_flags = LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR
  check(ioctl(loopFd, 0x4c0a, cfg), "LOOP_CONFIGURE");
  closeSync(backing);
  return { dev, fd: loopFd };
}

async function main() {
  log(`start pid=${process.pid} node=${process.version} argv=${process.argv.slice(2).join(" ")}`);
  const sys = realSyscalls();
  earlyMounts({ sys });
  const cmdline = readFileSync("/proc/cmdline", "utf8");
  log(`early mounts done; cmdline: ${cmdline.trim()}`);

  const stage = new ModuleLoader({ sys, cmdline });
  const r1 = stage.load(["loop", "squashfs", "overlay"]);
  log(`stage modules: loaded [${r1.loaded.join(" ")}] failed [${r1.failed.map((f) => `${f.name}: ${f.error}`).join("; ")}]`);

  const { dev: loop, fd: loopFd } = attachLoop("/rootfs.sqsh");
  sys.mount(loop, "/sysroot", "squashfs", MS.RDONLY, null);
  closeSync(loopFd);
  // the node binary and the agent exist only in the stage: bind them over the stubs in rootfs.sqsh
  for (const p of ["/usr/bin/node", "/usr/lib/machined"]) sys.mount(p, `/sysroot${p}`, null, MS.BIND, null);
  for (const m of ["/dev", "/proc", "/sys", "/run", "/tmp"]) sys.mount(m, `/sysroot${m}`, null, MS_MOVE, null);
  process.chdir("/sysroot");
  sys.mount(".", "/", null, MS_MOVE, null);
  check(chroot("."), "chroot");
  process.chdir("/");
  log(`switched root to ${loop} (squashfs, read-only)`);

  for (const t of ["/system", "/var"]) sys.mount("tmpfs", t, "tmpfs", MS.NOSUID | MS.NODEV, "mode=0755");
  mkdirSync("/system/etc", { recursive: true });
  writeFileSync("/system/etc/resolv.conf", "nameserver 10.0.2.3\n");
  writeFileSync("/system/etc/hostname", "machined\n");
  writeFileSync("/system/etc/hosts", "127.0.0.1 localhost\n");
  sys.sethostname("machined");
  try {
    writeFileSync("/probe", "x");
    log("ERROR: root is writable");
  } catch (err) {
    log(`root is read-only (${(err as NodeJS.ErrnoException).code})`);
  }

  let t = Date.now();
  const full = new ModuleLoader({ sys, cmdline, dir: `/usr/lib/modules/${release()}` });
  const indexMs = Date.now() - t;
  t = Date.now();
  const r2 = full.coldplug();
  log(
    `coldplug: ${r2.passes} passes, index ${indexMs} ms, match+load ${Date.now() - t} ms, loaded [${r2.loaded.join(" ")}]` +
      (r2.failed.length ? ` failed [${r2.failed.map((f) => `${f.name}: ${f.error}`).join("; ")}]` : ""),
  );

  const ip = (...a: string[]) => execFileSync("/usr/bin/ip", a, { stdio: "inherit" });
  ip("link", "set", "lo", "up");
  ip("link", "set", "eth0", "up");
  ip("addr", "add", "10.0.2.15/24", "dev", "eth0");
  ip("route", "add", "default", "via", "10.0.2.2");
  log("network: eth0 10.0.2.15/24 via 10.0.2.2");

  const poweroff = /\bmachined\.smoke=poweroff\b/.test(cmdline);
  const server = createServer((sock) => {
    log(`connection from ${sock.remoteAddress}`);
    sock.end(`machined-smoke ok uptime=${uptime()}\n`, () => {
      if (poweroff) {
        log("poweroff requested by machined.smoke=poweroff");
        sys.sync();
        sys.reboot("poweroff");
      }
    });
  });
  server.listen(50000, () => {
    log("listening on :50000");
    void checkUserland();
  });
}

/** Proves the userland in rootfs.sqsh runs; asynchronous so the listener answers meanwhile. */
async function checkUserland() {
  const run = promisify(execFile);
  for (const [bin, arg] of [
    ["/usr/bin/containerd", "--version"],
    ["/usr/sbin/runc", "--version"],
    ["/usr/bin/etcd", "--version"],
    ["/usr/bin/ctr", "--version"],
    ["/usr/sbin/mkfs.xfs", "-V"],
  ]) {
    try {
      const { stdout } = await run(bin, [arg], { encoding: "utf8", timeout: 120_000 });
      log(`${bin}: ${stdout.split("\n")[0]}`);
    } catch (err) {
      log(`${bin}: FAILED ${(err as Error).message}`);
    }
  }
}

main().catch((err) => {
  log(`FATAL ${(err as Error).stack ?? err}`);
  process.exit(1);
});
