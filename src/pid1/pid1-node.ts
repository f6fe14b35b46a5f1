/**
 * The agent wired as PID 1: the one wiring (assemble.ts) with the differences of a real machine:
 *   - Node `local: false`: the install manager installs onto block devices and learns the booted slot from
 *     /proc/cmdline; blessing happens when MachineStatus is running + ready (install/boot.ts);
 *   - the network is managed (`pid1: true`);
 *   - reboot / shutdown are real: services stop, sync, reboot(2) (power.ts);
 *   - the first install moves the state folder onto the new STATE partition (state-mounts.ts) and reboots into it.
 */
import type { ModuleLoader } from "../host/modules.js";
import type { Syscalls } from "../host/syscalls.js";
import type { Power } from "./power.js";
import { assembleNode, type RunningNode } from "./assemble.js";
import { mountedVolumes } from "../controllers/block/volumes.js";
import { servicesUnavailableReason } from "./local.js";
import { adoptState, findSystemDisk, STATE_DIR } from "./state-mounts.js";
import { prepareKubernetesNode } from "../host/kubernetes-node.js";
import { dhcp4Lease } from "../host/net/dhcp4-client.js";
import { pid1Target } from "../host/net/apply.js";

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

export type Pid1Node = RunningNode;

export async function runPid1Node(o: Pid1NodeOptions): Promise<Pid1Node> {
  const stateDir = o.stateDir ?? STATE_DIR;
  const unavailable = servicesUnavailableReason();
  let diskBefore: string | undefined;
  // The machine runs Kubernetes (CRI, etcd and kubelet containers): modules, writable overlays, pod resolv.conf.
  const kube = prepareKubernetesNode({ sys: o.sys, modules: o.modules, stateDir, log: o.log });
  const running = await assembleNode({
    stateDir,
    local: false,
    listen: o.listen,
    logLevel: o.logLevel,
    services: !unavailable,
    kubernetes: true,
    volumes: mountedVolumes(),
    // The containerd health checks spawn ctr (a Go binary): on a slow machine (measured: a TCG guest on a loaded
    // host) one spawn takes longer than the default 3 s, so the check never passed and etcd/kubelet never started.
    serviceOptions: { containerd: { health: { timeoutMs: 20_000 } } },
    // DHCP for `dhcp: true` interfaces from the agent itself: the image has no udhcpc (nor a shell for its script).
    network: { manage: true, pid1: true, dhcpLease: (link) => dhcp4Lease(pid1Target(), link) },
    install: { insecureRegistries: o.insecureRegistries },
    power: {
      reboot: async () => void (await o.power.reboot()),
      powerOff: async () => void (await o.power.powerOff()),
    },
    // First install: once the disk is written, the config the apply stores next must land on its STATE.
    afterFirstInstall: async (node) => {
      const disk = diskBefore ? undefined : await findSystemDisk().catch(() => undefined);
      if (!disk) return;
      try {
        await adoptState(disk, { sys: o.sys, modules: o.modules, log: o.log });
      } catch (err) {
        node.log.error({ err }, `installed on ${disk}, but its STATE partition could not be mounted; the config stays in memory until reboot`);
      }
      // As Talos: a machine installed from maintenance mode reboots into the installed system once the apply
      // (which stores the config on the new STATE right after this hook) has been answered.
      node.log.info(`installed on ${disk}; rebooting into the installed system`);
      setTimeout(() => {
        try {
          node.reboot("");
        } catch (err) {
          node.log.error({ err }, "reboot after install failed to start; rebooting directly");
          void o.power.reboot();
        }
      }, 3000);
    },
  });
  diskBefore = await findSystemDisk().catch(() => undefined);
  if (unavailable) running.log.warn(`system services (containerd, etcd) disabled: ${unavailable}`);
  // The overlays hold EPHEMERAL: they go once the services are down, before /var is unmounted.
  return { ...running, stop: () => running.stop().finally(() => kube.unmount()) };
}
