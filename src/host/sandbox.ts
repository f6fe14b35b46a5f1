/**
 * The local-mode sandbox: a node of its own on this host, for Kubernetes in local mode. The node gets a network
 * namespace (made here, or given), private mount and UTS namespaces, and a root of its own assembled from the
 * host's /usr and /etc (an overlay) plus folders of its state folder over /var, /system, /opt/cni — so the node
 * uses upstream's paths (/var/lib/kubelet, /etc/cni/net.d, /system/secrets, ...) exactly as in the VM, while the
 * host's own files, network, sysctls and netfilter stay as they were. Its /etc/os-release is Talos's.
 *
 * Two halves:
 *  - `launchSandbox` (host side, the process the operator started): makes the network namespace and a veth pair
 *    (host side addressed, or attached to a bridge), forwards chosen host-loopback ports (the loopback registry)
 *    from the host-side address, runs the inner command in the namespaces, and undoes all of it when that ends;
 *  - `enterSandboxRoot` (inside, first thing): builds the private root and pivot_roots into it, as a container
 *    runtime does (runc needs a real root mount, not a chroot).
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, readlinkSync, rmdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import * as net from "node:net";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { MNT, MS, type Syscalls } from "./syscalls.js";
import { reapV1Folder, removeV1Folder } from "./cgroups-v1.js";
import { osRelease } from "../machinery/version.js";

export interface SandboxNetwork {
  /** Enter this existing network namespace (`ip netns list`) and leave its setup to whoever made it. */
  netns?: string;
  /** Node side of the veth, as CIDR (default 10.213.0.2/24) — only when the sandbox makes the namespace. */
  address?: string;
  /** Host side of the veth (default: the .1 of the node's subnet); ignored with `bridge`. */
  hostAddress?: string;
  /** Attach the host side to this existing bridge instead of addressing it. */
  bridge?: string;
  /** With a bridge: the node's default gateway (the bridge's own address); nothing is forwarded then. */
  gateway?: string;
  /** Host-loopback TCP ports to forward from the host-side address (e.g. 5000, the loopback registry). */
  forward?: number[];
}

export interface LaunchOptions extends SandboxNetwork {
  /** Short unique name (namespace and interface names derive from it). */
  id: string;
  /** The command to run inside: node + machined + its arguments. */
  argv: string[];
  /** The node's cgroup folder: whatever is still in it when the node ends (pod and container processes) is killed. */
  cgroupFolder?: string;
  log: (msg: string) => void;
}

const ip = (...args: string[]) => {
  const r = spawnSync("ip", args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`ip ${args.join(" ")}: ${(r.stderr || r.error?.message || "").trim()}`);
  return r.stdout;
};

/** The host side address for a node CIDR: the .1 of its subnet (IPv4). */
export function defaultHostAddress(nodeCidr: string): string {
  const [addr, len] = nodeCidr.split("/");
  const o = addr.split(".").map(Number);
  return `${o[0]}.${o[1]}.${o[2]}.1/${len}`;
}

/** Runs `argv` in the sandbox's namespaces; resolves with its exit code once everything made here is undone. */
export async function launchSandbox(o: LaunchOptions): Promise<number> {
  const made: Array<() => void> = [];
  const undo = () => {
    for (const f of made.reverse()) {
      try {
        f();
      } catch (err) {
        o.log(`sandbox cleanup: ${(err as Error).message}`);
      }
    }
    made.length = 0;
  };
  let netns = o.netns;
  let hostIP: string | undefined;
  try {
    if (!netns) {
      netns = `machined-${o.id}`;
      const hostIf = `mh-${o.id}`.slice(0, 15);
      const nodeAddr = o.address ?? "10.213.0.2/24";
      ip("netns", "add", netns);
      made.push(() => ip("netns", "del", netns as string));
      ip("link", "add", hostIf, "type", "veth", "peer", "name", "eth0", "netns", netns);
      made.push(() => {
        if (existsSync(`/sys/class/net/${hostIf}`)) ip("link", "del", hostIf);
      });
      if (o.bridge) ip("link", "set", hostIf, "master", o.bridge);
      else {
        const host = o.hostAddress ?? defaultHostAddress(nodeAddr);
        ip("addr", "add", host, "dev", hostIf);
        hostIP = host.split("/")[0];
      }
      ip("link", "set", hostIf, "up");
      ip("-n", netns, "link", "set", "lo", "up");
      ip("-n", netns, "addr", "add", nodeAddr, "dev", "eth0");
      ip("-n", netns, "link", "set", "eth0", "up");
      const gw = hostIP ?? o.gateway;
      if (gw) ip("-n", netns, "route", "add", "default", "via", gw);
      o.log(`sandbox: network namespace ${netns}, node ${nodeAddr}${hostIP ? `, host ${hostIP} (${hostIf})` : ` on bridge ${o.bridge}`}`);
    }
    const forwarders = hostIP ? await Promise.all((o.forward ?? []).map((p) => forward(hostIP as string, p))) : [];
    made.push(() => forwarders.forEach((s) => s.close()));
    // nsenter keeps our mounts (ip netns exec would remount /sys and drop the cgroup hierarchies under it).
    const child = spawn("nsenter", [`--net=/run/netns/${netns}`, "unshare", "--mount", "--uts", "--propagation", "private", ...o.argv], {
      stdio: "inherit",
    });
    const relay = (sig: NodeJS.Signals) => () => child.kill(sig);
    const handlers = (["SIGINT", "SIGTERM", "SIGHUP"] as const).map((s) => [s, relay(s)] as const);
    for (const [s, h] of handlers) process.on(s, h);
    const code = await new Promise<number>((resolve) => child.on("exit", (c, sig) => resolve(c ?? (sig ? 128 : 1))));
    for (const [s, h] of handlers) process.off(s, h);
    if (o.cgroupFolder) {
      // Container shims and pods outlive their containerd by design; the node is gone, so they go too.
      const killed = reapV1Folder(o.cgroupFolder);
      if (killed.length) o.log(`sandbox: stopped ${killed.length} process(es) the node left running`);
      await new Promise((r) => setTimeout(r, 200));
      removeV1Folder(o.cgroupFolder);
    }
    return code;
  } finally {
    undo();
  }
}

/** Accepts on `host:port` and pipes each connection to 127.0.0.1:port (the host's loopback service). */
function forward(host: string, port: number): Promise<net.Server> {
  const server = net.createServer((inbound) => {
    const out = net.connect(port, "127.0.0.1");
    inbound.pipe(out).pipe(inbound);
    const close = () => {
      inbound.destroy();
      out.destroy();
    };
    inbound.on("error", close).on("close", close);
    out.on("error", close).on("close", close);
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}

export interface SandboxRootOptions {
  /** The state folder on the host: /system/state inside; var/ and sandbox/ in it back /var and the overlays. */
  stateDir: string;
  /** Host folders the node needs at the same path inside (where machined's program and node_modules live). */
  programDirs: string[];
  /** Folder with the CNI plugins, mounted read-only as /opt/cni/bin. */
  cniBin?: string;
}

/** Inside the fresh mount namespace: assemble the node's root and make it the root of this process. */
export function enterSandboxRoot(sys: Syscalls, o: SandboxRootOptions): void {
  const base = join(o.stateDir, "sandbox");
  const root = join(base, "root");
  for (const d of ["etc", "usr"]) for (const l of ["upper", "work"]) mkdirSync(join(base, d, l), { recursive: true });
  for (const d of [root, join(o.stateDir, "var")]) mkdirSync(d, { recursive: true });
  // Nothing we mount may propagate back to the host.
  sys.mount("none", "/", null, MS.REC | MS.PRIVATE, null);
  sys.mount("tmpfs", root, "tmpfs", MS.NOSUID | MS.NODEV, "mode=0755");
  const at = (p: string) => join(root, p);
  const bind = (src: string, dst: string, opts: { ro?: boolean; rec?: boolean } = {}) => {
    mkdirSync(at(dst), { recursive: true });
    sys.mount(src, at(dst), null, MS.BIND | (opts.rec ? MS.REC : 0), null);
    if (opts.ro) sys.mount("none", at(dst), null, MS.BIND | MS.REMOUNT | MS.RDONLY | (opts.rec ? MS.REC : 0), null);
  };
  // The host's programs and libraries; merged-/usr symlinks kept as symlinks. /usr and /etc are overlays, so the node
  // can add what upstream's root has (/usr/libexec/kubernetes, /etc/kubernetes, /etc/cni) without touching the host's.
  const overlay = (d: string) => {
    mkdirSync(at(d));
    sys.mount("overlay", at(d), "overlay", 0, `lowerdir=/${d},upperdir=${join(base, d, "upper")},workdir=${join(base, d, "work")}`);
  };
  overlay("usr");
  for (const d of ["bin", "sbin", "lib", "lib32", "lib64", "libx32"]) {
    const host = `/${d}`;
    if (!existsSync(host)) continue;
    if (lstatSync(host).isSymbolicLink()) symlinkSync(readlinkSync(host), at(d));
    else bind(host, d, { ro: true, rec: true });
  }
  overlay("etc");
  bind("/dev", "dev", { rec: true });
  bind("/proc", "proc", { rec: true });
  // A fresh sysfs shows this network namespace's links; the cgroup hierarchies are the host's.
  mkdirSync(at("sys"));
  sys.mount("sysfs", at("sys"), "sysfs", MS.NOSUID | MS.NODEV | MS.NOEXEC, null);
  if (existsSync("/sys/fs/cgroup")) bind("/sys/fs/cgroup", "sys/fs/cgroup", { rec: true });
  for (const [d, mode] of [["run", "0755"], ["tmp", "1777"], ["opt", "0755"]] as const) {
    mkdirSync(at(d));
    sys.mount("tmpfs", at(d), "tmpfs", MS.NOSUID | MS.NODEV, `mode=${mode}`);
  }
  bind(join(o.stateDir, "var"), "var");
  for (const [name, target] of [["run", "/run"], ["lock", "/run/lock"]] as const) {
    const p = at(join("var", name));
    if (!existsSync(p)) symlinkSync(target, p);
  }
  bind(o.stateDir, "system/state");
  if (o.cniBin) bind(o.cniBin, "opt/cni/bin", { ro: true });
  for (const d of o.programDirs) bind(d, d.replace(/^\//, ""), { ro: true });
  // A machine-id of its own (the kubelet reports it), kept across restarts in the overlay.
  const machineId = at("etc/machine-id");
  if (!existsSync(join(base, "etc", "upper", "machine-id"))) writeFileSync(machineId, `${randomBytes(16).toString("hex")}\n`);
  // The OS the node says it is (the kubelet's OS-IMAGE): Talos's, not the host's. Written on every start, as the
  // version may have changed; the host's is often a symlink into /usr, which must be replaced, not written through.
  const osReleasePath = at("etc/os-release");
  rmSync(osReleasePath, { force: true });
  writeFileSync(osReleasePath, osRelease(), { mode: 0o644 });
  const old = at(".oldroot");
  mkdirSync(old);
  sys.pivotRoot(root, old);
  process.chdir("/");
  sys.umount("/.oldroot", MNT.DETACH);
  rmdirSync("/.oldroot");
}

/** True when this process already runs inside a sandbox root (the marker enterSandboxRoot's caller sets). */
export function insideSandbox(): boolean {
  return process.env.MACHINED_SANDBOXED === "1";
}

/** A short stable id for a state folder (namespace and interface names). */
export function sandboxId(stateDir: string): string {
  let h = 0;
  for (const c of stateDir) h = (Math.imul(h, 31) + c.charCodeAt(0)) >>> 0;
  return h.toString(36).slice(0, 6);
}
