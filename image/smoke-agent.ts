/**
 * Minimal stand-in for dist/machined.mjs (`make image AGENT=smoke`): the boot contract without the agent, for
 * measuring the image itself (the real agent is `machined init`, src/pid1/init.ts). It walks the boot contract of docs/image.md with the project's own host code so the image
 * is proven end to end: early mounts -> stage modules -> loop-mount /rootfs.sqsh read-only -> switch root ->
 * coldplug from the full module set -> network (ip from rootfs.sqsh) -> TCP listener on :50000.
 * Built by image/smoke-agent.sh into /tmp (never into dist/). Not part of the product.
 */
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { release } from "node:os";
import { earlyMounts } from "../src/pid1/early-mounts.js";
import { switchRoot } from "../src/pid1/switch-root.js";
import { ModuleLoader } from "../src/host/modules.js";
import { MS, realSyscalls } from "../src/host/syscalls.js";

const t0 = Date.now();
const uptime = () => {
  try {
    return readFileSync("/proc/uptime", "utf8").split(" ")[0];
  } catch {
    return "?";
  }
};
const log = (msg: string) => process.stdout.write(`[machined-smoke +${Date.now() - t0}ms up=${uptime()}s] ${msg}\n`);

async function main() {
  log(`start pid=${process.pid} node=${process.version} argv=${process.argv.slice(2).join(" ")}`);
  const sys = realSyscalls();
  earlyMounts({ sys });
  const cmdline = readFileSync("/proc/cmdline", "utf8");
  log(`early mounts done; cmdline: ${cmdline.trim()}`);

  // stage modules, /rootfs.sqsh on a read-only loop device, bind node + agent, MS_MOVE + chroot (src/pid1)
  const { loop } = switchRoot({ sys, cmdline, log });
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
