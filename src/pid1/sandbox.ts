/**
 * Local mode in a sandbox (`machined start --sandbox`): the node gets network, mount and UTS namespaces and a root
 * of its own (src/host/sandbox.ts), and runs there as it would on a machine: upstream's paths, its own hostname and
 * network managed, the CRI, etcd and the kubelet as containers. Reboots stay simulated and the host is untouched.
 */
import { dirname, resolve } from "node:path";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { enterSandboxRoot, insideSandbox, launchSandbox, sandboxId, type SandboxNetwork } from "../host/sandbox.js";
import { realSyscalls } from "../host/syscalls.js";
import { assembleNode, type RunningNode } from "./assemble.js";
import { cgroupPrefixFor } from "../lifecycle/services.js";

export interface SandboxOptions extends SandboxNetwork {
  /** The node's state folder on the host. */
  stateDir: string;
  /** Where the API listens inside the sandbox; default 0.0.0.0:50000 (the namespace is the node's own). */
  listen?: { host: string; port: number };
  logLevel?: string;
  /** CNI plugins for /opt/cni/bin; default: the set `make kube-images` builds (with flannel's), else Debian's. */
  cniBin?: string;
}

/** The CNI plugins `make kube-images` packs (image/kube/lib.sh CNI_TAR), unpacked once into the node's state folder. */
function cachedCniBin(stateDir: string): string | undefined {
  const cache = join(process.env.MACHINED_CACHE ?? "/var/cache/machined", "kube-images", "cni");
  const dirs = existsSync(cache) ? readdirSync(cache).filter((d) => d.endsWith(`-${process.arch === "arm64" ? "arm64" : "amd64"}`)).sort() : [];
  const tar = dirs.length ? join(cache, dirs[dirs.length - 1], "cni-plugins.tar") : undefined;
  if (!tar || !existsSync(tar)) return undefined;
  const out = join(stateDir, "sandbox", "cni-bin");
  if (!existsSync(join(out, "flannel"))) {
    mkdirSync(out, { recursive: true });
    const r = spawnSync("tar", ["-xf", tar, "-C", out]);
    if (r.status !== 0) throw new Error(`unpacking ${tar}: ${r.stderr.toString().trim()}`);
  }
  return out;
}

/** The host side: make the namespaces, run this same program inside them, clean up when it ends. */
export async function runSandboxLauncher(o: SandboxOptions, argv: string[]): Promise<number> {
  if (process.getuid?.() !== 0) throw new Error("machined start --sandbox needs root (it makes network and mount namespaces)");
  process.env.MACHINED_SANDBOXED = "1";
  // The inside is handed the CNI folder through the same option, already resolved on the host side.
  if (!argv.some((a) => a.startsWith("--sandbox-cni-bin"))) {
    const cni = o.cniBin ?? cachedCniBin(o.stateDir);
    if (cni) argv = [...argv, "--sandbox-cni-bin", cni];
  }
  return launchSandbox({
    id: sandboxId(o.stateDir),
    netns: o.netns,
    address: o.address,
    hostAddress: o.hostAddress,
    bridge: o.bridge,
    gateway: o.gateway,
    forward: o.forward,
    cgroupFolder: cgroupPrefixFor(o.stateDir),
    argv: [process.execPath, ...process.execArgv, ...argv],
    log: (m) => console.error(m),
  });
}

/** The inside: enter the private root, then run the node with upstream's paths. */
export async function runSandboxedNode(o: SandboxOptions): Promise<RunningNode> {
  if (!insideSandbox()) throw new Error("runSandboxedNode: not inside a sandbox (use machined start --sandbox)");
  const program = resolve(dirname(process.argv[1] ?? "."), "..");
  const cniBin = o.cniBin ?? "/usr/lib/cni";
  enterSandboxRoot(realSyscalls(), { stateDir: o.stateDir, programDirs: [program], cniBin: existsSync(cniBin) ? cniBin : undefined });
  const running = await assembleNode({
    stateDir: "/system/state",
    local: true,
    sandbox: true,
    kubernetes: true,
    cgroupPrefix: cgroupPrefixFor(o.stateDir),
    listen: o.listen ?? { host: "0.0.0.0", port: 50000 },
    logLevel: o.logLevel ?? "info",
    services: true,
    network: { manage: true, sandbox: true, etcRoot: "/etc" },
    startedAt: performance.now(),
  });
  // The launcher relays the operator's signal, which may also reach us directly: stop once, ignore repeats.
  let stopping = false;
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.on(sig, () => {
      if (stopping) return;
      stopping = true;
      running.log.info({ signal: sig }, "stopping");
      void running.stop().finally(() => process.exit(0));
    });
  }
  return running;
}
