/**
 * Local mode in a sandbox (`machined start --sandbox`): the node gets network, mount and UTS namespaces and a root
 * of its own (src/host/sandbox.ts), and runs there as it would on a machine: upstream's paths, its own hostname and
 * network managed, the CRI, etcd and the kubelet as containers. Reboots stay simulated and the host is untouched.
 */
import { dirname, resolve } from "node:path";
import { existsSync } from "node:fs";
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
  /** CNI plugins for /opt/cni/bin; default: Debian's containernetworking-plugins. */
  cniBin?: string;
}

/** The host side: make the namespaces, run this same program inside them, clean up when it ends. */
export async function runSandboxLauncher(o: SandboxOptions, argv: string[]): Promise<number> {
  if (process.getuid?.() !== 0) throw new Error("machined start --sandbox needs root (it makes network and mount namespaces)");
  process.env.MACHINED_SANDBOXED = "1";
  return launchSandbox({
    id: sandboxId(o.stateDir),
    netns: o.netns,
    address: o.address,
    hostAddress: o.hostAddress,
    bridge: o.bridge,
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
