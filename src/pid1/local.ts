/**
 * Local mode: the whole agent as an ordinary process. State lives in one folder, reboots are simulated, and the
 * host is only observed (never reconfigured). The wiring is the one PID 1 uses (assemble.ts).
 */
import * as path from "node:path";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { assembleNode, type AssembleOptions, type RunningNode } from "./assemble.js";
import { createFatalHandler } from "./fatal.js";

export type { RunningNode } from "./assemble.js";

export interface LocalOptions {
  stateDir: string;
  listen: { host: string; port: number };
  logLevel?: string;
  /** Run containerd/etcd under the supervisor. Default: only as root with both binaries installed. */
  services?: boolean;
  /** Service settings for tests (etcd ports, containerd settings, cgroups). */
  serviceOptions?: AssembleOptions["serviceOptions"];
  /** Install/upgrade settings (disk-image files, boot tries, readiness deadline, registries) for local mode. */
  install?: AssembleOptions["install"];
}

/** Why services cannot run on this host (undefined: they can). */
export function servicesUnavailableReason(): string | undefined {
  if (process.getuid?.() !== 0) return "not running as root";
  for (const bin of ["containerd", "etcd"]) if (!onPath(bin)) return `${bin} is not installed (not found in PATH)`;
  return undefined;
}

function onPath(bin: string): boolean {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    try {
      accessSync(join(dir, bin), constants.X_OK);
      return true;
    } catch {
      // next folder
    }
  }
  return false;
}

export async function runLocalNode(opts: LocalOptions, handleSignals = true): Promise<RunningNode> {
  const startedAt = performance.now();
  const unavailable = opts.services === undefined ? servicesUnavailableReason() : undefined;
  const running = await assembleNode({
    stateDir: opts.stateDir,
    local: true,
    listen: opts.listen,
    logLevel: opts.logLevel ?? "info",
    services: opts.services ?? !unavailable,
    serviceOptions: opts.serviceOptions,
    // Local mode observes the host network and never changes it.
    network: { manage: false },
    // The host is only observed: the control plane's files go under the state folder, not /system.
    kubernetesRoot: path.join(opts.stateDir, "root"),
    install: opts.install,
    startedAt,
  });
  if (unavailable) running.log.info(`system services (containerd, etcd) disabled: ${unavailable}`);
  if (handleSignals) {
    // An uncaught error ends local mode the way a signal does: the supervised services (each in its own
    // process group, so they would outlive us) are stopped before the process exits.
    const sys = { getpid: () => process.pid, sync: () => {}, syncAsync: async () => {}, reboot: () => {} };
    createFatalHandler({ sys, cleanup: () => running.stop() }).install();
    // A signal may arrive twice (a terminal and a supervisor both forward it): stop once, ignore repeats.
    let stopping = false;
    for (const sig of ["SIGINT", "SIGTERM"] as const) {
      process.on(sig, () => {
        if (stopping) return;
        stopping = true;
        running.log.info({ signal: sig }, "stopping");
        void running.stop().finally(() => process.exit(0));
      });
    }
  }
  return running;
}
