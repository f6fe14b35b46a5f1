/**
 * The agent wired as PID 1: the same pieces as local mode (src/pid1/local.ts: store, controllers, services,
 * install manager, API) with the differences of a real machine:
 *   - Node `local: false`: the install manager installs onto block devices and learns the booted slot from
 *     /proc/cmdline; blessing happens when MachineStatus is running + ready (install/boot.ts);
 *   - the network is managed (`pid1: true`);
 *   - reboot / shutdown are real: services stop, sync, reboot(2) (power.ts). Node.restart (local-only) is
 *     replaced by the PID-1 reboot, Node.shutdown by a real power-off;
 *   - the first install moves the state folder onto the new STATE partition (state-mounts.ts).
 */
import * as os from "node:os";
import pino from "pino";
import { hostAddresses, LateSink, serveApi, serviceHooks } from "./shared.js";
import { EventBus } from "../state/events.js";
import { InMemoryState } from "../state/inmem.js";
import { Node } from "../lifecycle/node.js";
import { NodeServices, servicesUnavailableReason } from "../lifecycle/services.js";
import type { ApiServer } from "../api/server.js";
import { InstallManager } from "../lifecycle/install/manager.js";
import type { ModuleLoader } from "../host/modules.js";
import type { Syscalls } from "../host/syscalls.js";
import { buildRegistry, publishDefinitions } from "./registry.js";
import { startControllers } from "./controllers.js";
import type { Power } from "./power.js";
import { adoptState, findSystemDisk, STATE_DIR } from "./state-mounts.js";

export interface Pid1NodeOptions {
  sys: Syscalls;
  modules: Pick<ModuleLoader, "load">;
  power: Power;
  listen: { host: string; port: number };
  logLevel: string;
  insecureRegistries: string[];
  stateDir?: string;
  log: (msg: string) => void;
}

export interface Pid1Node {
  node: Node;
  api: ApiServer;
  services: NodeServices;
  install: InstallManager;
  port: number;
  /** stops controllers, the API and the services (before reboot/power-off) */
  stop(): Promise<void>;
}


export async function runPid1Node(o: Pid1NodeOptions): Promise<Pid1Node> {
  const stateDir = o.stateDir ?? STATE_DIR;
  const sink = new LateSink();
  const log = pino({ level: o.logLevel, base: { service: "machined" } }, pino.multistream([{ stream: process.stdout }, { stream: sink }]));
  const events = new EventBus();
  const state = new InMemoryState();
  const types = buildRegistry();
  publishDefinitions(state, types);
  const node = new Node({ stateDir, local: false, log, state, events });
  const hostname = () => os.hostname();
  const unavailable = servicesUnavailableReason();
  if (unavailable) log.warn(`system services (containerd, etcd) disabled: ${unavailable}`);
  const services = new NodeServices({ node, stateDir, enabled: !unavailable, hostname, addresses: () => ["127.0.0.1", ...hostAddresses()] });
  sink.attach(services.logSink());
  const localNames = () => [...hostAddresses(), "127.0.0.1", "::1", "localhost", hostname()];
  const hooks = serviceHooks(services);
  const runtime = startControllers({
    state,
    log,
    stateDir,
    setReadiness: (unmet) => node.setControllerReadiness(unmet),
    network: { manage: true, pid1: true },
    etcdMemberId: hooks.etcdMemberId,
  });
  const install = new InstallManager({ node, stateDir, insecureRegistries: o.insecureRegistries, ctr: hooks.ctr, leaveEtcd: hooks.leaveEtcd }).attach();

  // First install: once the disk is written, the config the apply stores next must land on its STATE.
  const installHook = node.installer;
  node.installer = async (cfg) => {
    const before = await findSystemDisk().catch(() => undefined);
    await installHook?.(cfg);
    const disk = before ? undefined : await findSystemDisk().catch(() => undefined);
    if (!disk) return;
    try {
      await adoptState(disk, { sys: o.sys, modules: o.modules, log: o.log });
    } catch (err) {
      log.error({ err }, `installed on ${disk}, but its STATE partition could not be mounted; the config stays in memory until reboot`);
    }
    // As Talos: a machine installed from maintenance mode reboots into the installed system once the apply
    // (which stores the config on the new STATE right after this hook) has been answered.
    log.info(`installed on ${disk}; rebooting into the installed system`);
    setTimeout(() => {
      try {
        node.reboot("");
      } catch (err) {
        log.error({ err }, "reboot after install failed to start; rebooting directly");
        void o.power.reboot();
      }
    }, 3000);
  };

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      identity.stopRenewal();
      await runtime.stop().catch(() => {});
      await api.close().catch(() => {});
      await services.shutdown().catch((err) => log.error({ err }, "stopping services failed"));
    })());
  // Node.reboot/upgrade/rollback/reset end in restart(): on a real machine that is reboot(2).
  node.restart = async () => {
    log.info("rebooting");
    await o.power.reboot();
  };
  const baseShutdown = node.shutdown.bind(node);
  node.shutdown = (actorId: string) => {
    baseShutdown(actorId);
    // the base sequence stops the services; the power-off follows it
    setTimeout(() => void o.power.powerOff(), 1500);
  };

  const deps = { node, state, types, log, platform: { name: "metal", mode: "metal" }, localNames, services, runtime, install };
  const { api, identity, addr, mode } = await serveApi({ deps, hostname, listen: o.listen });
  log.info({ address: `${addr.address}:${addr.port}`, mode, stateDir }, "machined API listening");
  return { node, api, services, install, port: addr.port, stop };
}
