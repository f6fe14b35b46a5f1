/**
 * Local mode wiring: the whole agent as an ordinary process. State lives in one folder, reboots are
 * simulated, and the host is only observed (never reconfigured).
 */
import * as os from "node:os";
import * as path from "node:path";
import pino from "pino";
import { hostAddresses, LateSink, serveApi, serviceHooks } from "./shared.js";
import { EventBus } from "../state/events.js";
import { InMemoryState } from "../state/inmem.js";
import { Node } from "../lifecycle/node.js";
import { NodeServices, servicesUnavailableReason, type NodeServicesOptions } from "../lifecycle/services.js";
import type { ApiServer } from "../api/server.js";
import { buildRegistry, publishDefinitions } from "./registry.js";
import { startControllers } from "./controllers.js";
import { InstallManager, type InstallManagerOptions } from "../lifecycle/install/manager.js";
import { createFatalHandler } from "./fatal.js";

export interface LocalOptions {
  stateDir: string;
  listen: { host: string; port: number };
  logLevel?: string;
  /** Run containerd/etcd under the supervisor. Default: only as root with both binaries installed. */
  services?: boolean;
  /** Service settings for tests (etcd ports, containerd off, ...). */
  serviceOptions?: Partial<Pick<NodeServicesOptions, "containerd" | "etcd" | "cgroups">>;
  /** Install/upgrade settings (disk-image files, boot tries, readiness deadline, registries) for local mode. */
  install?: Partial<Omit<InstallManagerOptions, "node" | "stateDir">>;
}

export interface RunningNode {
  node: Node;
  api: ApiServer;
  services: NodeServices;
  install: InstallManager;
  port: number;
  stop(): Promise<void>;
}


export async function runLocalNode(opts: LocalOptions, handleSignals = true): Promise<RunningNode> {
  const started = performance.now();
  // The agent's own log goes to stdout and, once the supervisor exists, to the `machined` service log
  // (what `talosctl logs machined` reads).
  const sink = new LateSink();
  const log = pino(
    { level: opts.logLevel ?? "info", base: { service: "machined" } },
    pino.multistream([{ stream: process.stdout }, { stream: sink }]),
  );
  const events = new EventBus();
  const state = new InMemoryState();
  const types = buildRegistry();
  publishDefinitions(state, types);
  const node = new Node({ stateDir: opts.stateDir, local: true, log, state, events });
  const hostname = () => os.hostname();
  const unavailable = opts.services === undefined ? servicesUnavailableReason() : undefined;
  if (unavailable) log.info(`system services (containerd, etcd) disabled: ${unavailable}`);
  // Before boot: the stored config's activation must already reach the services.
  const services = new NodeServices({
    node,
    stateDir: opts.stateDir,
    enabled: opts.services ?? !unavailable,
    hostname,
    addresses: () => ["127.0.0.1", ...hostAddresses()],
    ...opts.serviceOptions,
  });
  sink.attach(services.logSink());
  const localNames = () => [...hostAddresses(), "127.0.0.1", "::1", "localhost", hostname(), opts.listen.host];
  const hooks = serviceHooks(services);
  // Local mode observes the host network and never changes it.
  const runtime = startControllers({
    state,
    log,
    stateDir: opts.stateDir,
    setReadiness: (unmet) => node.setControllerReadiness(unmet),
    network: { manage: false },
    // The kubelet's staticPodPath, kept inside the state folder in local mode.
    manifestsDir: path.join(opts.stateDir, "kubernetes", "manifests"),
    etcdMemberId: hooks.etcdMemberId,
  });
  // Install/upgrade/reset on disk-image files (src/lifecycle/install); hooks the node before it boots.
  const install = new InstallManager({
    node,
    stateDir: opts.stateDir,
    ctr: hooks.ctr,
    leaveEtcd: hooks.leaveEtcd,
    ...opts.install,
  }).attach();
  const deps = { node, state, types, log, platform: { name: "metal", mode: "metal" }, localNames, services, runtime, install };
  const { api, identity, addr, mode } = await serveApi({ deps, hostname, listen: opts.listen });
  log.info(
    { address: `${addr.address}:${addr.port}`, mode, stateDir: opts.stateDir, startupMs: Math.round(performance.now() - started) },
    "machined API listening",
  );
  const stop = async () => {
    identity.stopRenewal();
    await runtime.stop();
    await api.close();
    await services.shutdown();
  };
  if (handleSignals) {
    // An uncaught error ends local mode the way a signal does: the supervised services (each in its own
    // process group, so they would outlive us) are stopped before the process exits.
    const sys = { getpid: () => process.pid, sync: () => {}, syncAsync: async () => {}, reboot: () => {} };
    createFatalHandler({ sys, cleanup: stop }).install();
    for (const sig of ["SIGINT", "SIGTERM"] as const) {
      process.once(sig, () => {
        log.info({ signal: sig }, "stopping");
        void stop().finally(() => process.exit(0));
      });
    }
  }
  return { node, api, services, install, port: addr.port, stop };
}
