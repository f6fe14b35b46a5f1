/**
 * `machined init`: the agent as PID 1 of the OS image (docs/image.md, "What `machined init` must do").
 *
 *  1. early mounts (/proc, /sys, /dev, /run, /tmp, cgroup2), reaper, signal and fatal handlers;
 *  2. in the initramfs: stage modules, /rootfs.sqsh on a read-only loop device, switch root (switch-root.ts);
 *  3. tmpfs on /system (runtime /etc files, maintenance state) and /var; coldplug of the full module set;
 *     the watchdog; the static network of the kernel command line (cmdline-net.ts);
 *  4. state: the STATE partition of an installed system disk on /system/state (EPHEMERAL on /var), otherwise
 *     tmpfs: maintenance mode; a first install mounts the new STATE and carries the state over;
 *  5. the same wiring as local mode (pid1-node.ts), with real reboot/power-off and the network managed.
 *
 * Boot-stage lines go to the console as `[machined init +<ms> up=<uptime>s] ...` (image/smoke.mjs and the VM
 * tests read them); everything after that is the agent's normal log.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync, writeSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { release } from "node:os";
import { earlyMounts } from "./early-mounts.js";
import { createFatalHandler, type FatalHandler } from "./fatal.js";
import { startReaper } from "./reaper.js";
import { installSignalHandlers } from "./signals.js";
import { createPower } from "./power.js";
import { inInitramfs, switchRoot } from "./switch-root.js";
import { armWatchdog } from "../host/watchdog.js";
import { applyCmdlineNet, bootDhcp, parseCmdlineNet } from "./cmdline-net.js";
import { mountSystemDisk, STATE_DIR, unmountSystemDisk } from "./state-mounts.js";
import { runPid1Node, type Pid1Node } from "./pid1-node.js";
import { ensureMounts } from "../host/mounts.js";
import { ModuleLoader } from "../host/modules.js";
import { MS, realSyscalls, type Syscalls } from "../host/syscalls.js";
import { pid1Target } from "../host/net/apply.js";

const t0 = Date.now();
const uptime = () => {
  try {
    return readFileSync("/proc/uptime", "utf8").split(" ")[0];
  } catch {
    return "?";
  }
};
/** Synchronous console line: PID 1 may die right after, and the log must be out by then. */
export function bootLog(msg: string): void {
  try {
    writeSync(1, `[machined init +${Date.now() - t0}ms up=${uptime()}s] ${msg}\n`);
  } catch {
    // no console
  }
}

/** Words of /proc/cmdline as a map (last one wins). */
export function cmdlineWords(cmdline: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const w of cmdline.trim().split(/\s+/)) {
    const i = w.indexOf("=");
    if (w) m.set(i > 0 ? w.slice(0, i) : w, i > 0 ? w.slice(i + 1) : "");
  }
  return m;
}

export interface InitOptions {
  listenPort?: number;
  logLevel?: string;
}

export async function runInit(opts: InitOptions = {}): Promise<number> {
  // The kernel starts init with HOME and TERM only; tools (ip, mkfs.*, containerd) are found through PATH.
  process.env.PATH ||= "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  const sys = realSyscalls();
  if (sys.getpid() !== 1) {
    console.error("machined init: must run as PID 1 (the init of the OS image); use `machined start` for local mode");
    return 2;
  }
  bootLog(`start pid=1 node=${process.version}`);
  let node: Pid1Node | undefined;
  const fatal: FatalHandler = createFatalHandler({ sys, cleanup: async () => node?.services.shutdown() });
  fatal.install();
  try {
    node = await boot(sys, opts, (n) => (node = n));
    bootLog(`listening on :${node.port} (${node.node.mode} mode)`);
  } catch (err) {
    fatal.fatal(err, "boot failed"); // logs, stops what runs, reboots after 10 s
  }
  return new Promise<number>(() => {}); // PID 1 never returns
}

async function boot(sys: Syscalls, opts: InitOptions, started: (n: Pid1Node) => void): Promise<Pid1Node> {
  let node: Pid1Node | undefined;
  startReaper({ sys, onError: (err) => bootLog(`reaper: ${String(err)}`) });
  earlyMounts({ sys });
  const cmdline = readFileSync("/proc/cmdline", "utf8");
  const words = cmdlineWords(cmdline);
  bootLog(`early mounts done; cmdline: ${cmdline.trim()}`);
  // Test hook for the fallback path (test/vm): a build whose entry carries this exits at once, which reboots
  // (see fatal.ts: PID 1 exiting → reboot), spending a boot-counter try exactly like a crashing agent.
  if (words.get("machined.testfail") === "exit") {
    bootLog("machined.testfail=exit: exiting (test build)");
    process.exit(1);
  }

  if (inInitramfs()) {
    const { loop } = switchRoot({ sys, cmdline, log: bootLog });
    bootLog(`switched root to ${loop} (squashfs, read-only)`);
  }
  runtimeMounts(sys);

  let t = Date.now();
  const modules = new ModuleLoader({ sys, cmdline, dir: `/usr/lib/modules/${release()}` });
  const indexMs = Date.now() - t;
  t = Date.now();
  const cp = modules.coldplug();
  bootLog(
    `coldplug: ${cp.passes} passes, index ${indexMs} ms, match+load ${Date.now() - t} ms, loaded ${cp.loaded.length} [${cp.loaded.join(" ")}]` +
      (cp.failed.length ? ` failed [${cp.failed.map((f) => `${f.name}: ${f.error}`).join("; ")}]` : ""),
  );
  const wd = armWatchdog({ modules, log: bootLog });
  if (wd) bootLog(`watchdog armed on ${wd.device}`);

  const net = parseCmdlineNet(cmdline);
  if (net) {
    try {
      const iface = await applyCmdlineNet(pid1Target(), net);
      writeFileSync("/system/etc/resolv.conf", net.dns.map((d) => `nameserver ${d}\n`).join(""));
      bootLog(`network: ${iface} ${net.address}${net.gateway ? ` via ${net.gateway}` : ""}${net.dns.length ? ` dns ${net.dns.join(",")}` : ""}`);
    } catch (err) {
      bootLog(`network: static config from the cmdline failed: ${(err as Error).message}`);
    }
  } else {
    // As upstream in maintenance mode: without a static address, ask DHCP on the first ethernet link, so the API
    // is reachable before any config names the network.
    try {
      const lease = await bootDhcp(pid1Target());
      if (lease) {
        writeFileSync("/system/etc/resolv.conf", lease.net.dns.map((d) => `nameserver ${d}\n`).join(""));
        bootLog(`network: ${lease.iface} ${lease.net.address}${lease.net.gateway ? ` via ${lease.net.gateway}` : ""} by DHCP (lease ${lease.seconds} s)`);
      } else {
        bootLog("network: no machined.ip= on the kernel command line and no DHCP offer; only the machine config configures links");
      }
    } catch (err) {
      bootLog(`network: DHCP at boot failed: ${(err as Error).message}`);
    }
  }

  const disk = await mountSystemDisk({ sys, modules, log: bootLog });
  bootLog(disk ? `state: STATE of ${disk} on ${STATE_DIR}` : `state: tmpfs on ${STATE_DIR} (maintenance until installed)`);

  const power = createPower({
    sys,
    stopServices: async () => {
      await node?.stop();
      // also after a first install in this boot, when STATE was mounted later (adoptState)
      unmountSystemDisk({ sys, log: bootLog });
    },
    log: bootLog,
  });
  installSignalHandlers({
    isPid1: true,
    onShutdown: () => void power.powerOff(),
    onReboot: () => void power.reboot(),
    log: bootLog,
  });

  node = await runPid1Node({
    sys,
    modules,
    power,
    listen: { host: "0.0.0.0", port: opts.listenPort ?? 50000 },
    logLevel: opts.logLevel ?? words.get("machined.loglevel") ?? "info",
    insecureRegistries: (words.get("machined.insecure-registries") ?? "").split(",").filter(Boolean),
    log: bootLog,
  });
  started(node);
  return node;
}

/** /system (runtime /etc files, maintenance state) and /var (until EPHEMERAL) on tmpfs; the /etc files. */
function runtimeMounts(sys: Syscalls): void {
  const outcomes = ensureMounts(sys, [
    { source: "tmpfs", target: "/system", fstype: "tmpfs", flags: MS.NOSUID | MS.NODEV, data: "mode=0755", mode: 0o755 },
    { source: "tmpfs", target: "/var", fstype: "tmpfs", flags: MS.NOSUID | MS.NODEV, data: "mode=0755", mode: 0o755 },
  ]);
  const failed = outcomes.filter((o) => o.action === "failed");
  if (failed.length) throw new Error(`runtime mounts failed: ${failed.map((o) => `${o.target}: ${o.error?.message}`).join("; ")}`);
  mkdirSync("/system/etc", { recursive: true });
  mkdirSync(STATE_DIR, { recursive: true, mode: 0o700 });
  const files: Record<string, string> = {
    hostname: "machined\n",
    hosts: "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n",
    "resolv.conf": "",
    "machine-id": `${randomBytes(16).toString("hex")}\n`,
  };
  for (const [name, text] of Object.entries(files)) {
    if (!existsSync(`/system/etc/${name}`)) writeFileSync(`/system/etc/${name}`, text);
  }
  try {
    sys.sethostname("machined");
  } catch {
    // the hostname controller sets it later anyway
  }
  try {
    writeFileSync("/.rw-probe", "x");
    bootLog("WARNING: the root filesystem is writable");
  } catch {
    // expected: rootfs.sqsh is read-only
  }
}
