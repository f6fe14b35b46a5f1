/**
 * The one wiring of the agent, for both entries (local mode and PID 1): the store, the node with its services,
 * install and power given to its constructor, the controllers, and the API. The entries differ only in the
 * options they pass: where state lives, whether the network is managed, how power works, how disks are found.
 *
 * The path from an ApplyConfiguration to a running process: API handler → ConfigApplier → Node stores the config
 * and publishes the MachineConfig resource → controllers derive resources (hostname, addresses, secrets, etcd and
 * kubelet specs) → service controllers ensure() services in the supervisor, and the API identity follows
 * ApiCertificates. Nothing below the API calls back into what called it.
 */
import { Writable } from "node:stream";
import pino, { type Logger } from "pino";
import type { AddressInfo } from "node:net";
import { EventBus } from "../state/events.js";
import { InMemoryState } from "../state/inmem.js";
import type { State } from "../state/types.js";
import { Node, type NodePower } from "../lifecycle/node.js";
import { cgroupPrefixFor, SystemServices } from "../lifecycle/services.js";
import { ensureV1Folder, isCgroupV1, reapV1Folder } from "../host/cgroups-v1.js";
import { InstallManager, type InstallManagerOptions } from "../lifecycle/install/manager.js";
import type { MachineConfig } from "../machinery/config/index.js";
import { readSpec } from "../machinery/resources/read.js";
import { HOSTNAME_ID, HostnameStatusType, NODE_ADDRESS, NodeAddressType, nodeAddressIPs } from "../machinery/resources/types/network.js";
import { Ctr, CRI_CONTAINERD_PATHS, type ContainerdServiceOptions, type EtcdServiceOptions } from "../supervisor/index.js";
import type { CgroupManager } from "../host/cgroups.js";
import type { ControllerRuntime } from "../state/runtime/index.js";
import { ApiServer } from "../api/server.js";
import { buildServices } from "../api/services.js";
import { ApiIdentity } from "../api/identity.js";
import { TrustdGrpcServer } from "../api/trustd/server.js";
import { TRUSTD_PORT, TrustdService } from "../supervisor/services/trustd.js";
import type { ApiDeps } from "../api/deps.js";
import { criClient } from "../host/cri/client.js";
import { CRI_CONTAINERD_SOCKET, ETCD_DATA } from "../machinery/paths.js";
import { buildRegistry, publishDefinitions } from "./registry.js";
import { startControllers, type ControllerWiring } from "./controllers.js";

export interface AssembleOptions {
  stateDir: string;
  /** Local mode: simulated reboots, the host only observed. */
  local: boolean;
  /** Local mode inside a sandbox (own namespaces and root): upstream paths, Kubernetes can run. */
  sandbox?: boolean;
  /** PID 1 or a sandbox: the node runs Kubernetes (CRI, etcd and kubelet containers, kernel parameters). */
  kubernetes?: boolean;
  /** The cgroup folder of this node (a sandbox derives it from its host state folder, unique per node). */
  cgroupPrefix?: string;
  listen: { host: string; port: number };
  /** trustd on control planes; default the API's host on port 50001 (an ephemeral port when the API's is). */
  trustd?: { host: string; port: number };
  logLevel: string;
  /** Run daemons (containerd, etcd, ...); false where the host cannot (not root, binaries missing). */
  services: boolean;
  /** Placement of the daemons (test ports and timings, containerd settings). */
  serviceOptions?: { containerd?: false | Omit<ContainerdServiceOptions, "stateDir">; etcd?: Partial<Omit<EtcdServiceOptions, "spec" | "pki" | "stateDir">>; cgroups?: CgroupManager };
  network: ControllerWiring["network"];
  /** Root of the filesystem view the control plane's secrets and configs are written under; default "/". */
  kubernetesRoot?: string;
  install?: Partial<Omit<InstallManagerOptions, "node" | "stateDir" | "ctr">>;
  /** PID 1: reboot(2) and power-off; absent in local mode (simulated). */
  power?: NodePower;
  /** PID 1: after the first install wrote the disk (STATE moves onto it, then the machine reboots into it). */
  afterFirstInstall?: (node: Node, cfg: MachineConfig) => Promise<void>;
  /** Extra startup facts for the "listening" line. */
  startedAt?: number;
  /** Where STATE and EPHEMERAL are (VolumeStatus); default the state folder as both (local mode). */
  volumes?: ControllerWiring["volumes"];
}

export interface RunningNode {
  node: Node;
  api: ApiServer;
  services: SystemServices;
  install: InstallManager;
  runtime: ControllerRuntime;
  state: State;
  port: number;
  log: Logger;
  /** Stops controllers, the API and the services (process end, or PID 1 before reboot/power-off). */
  stop(): Promise<void>;
}

/** A stream that drops writes until its real destination is attached. */
class LateSink extends Writable {
  private target: Writable | undefined;

  attach(target: Writable): void {
    this.target = target;
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (!this.target) return cb();
    this.target.write(chunk, cb);
  }
}

export async function assembleNode(o: AssembleOptions): Promise<RunningNode> {
  // The agent's own log goes to stdout and to the `machined` service log (what `talosctl logs machined` reads).
  const sink = new LateSink();
  const log = pino({ level: o.logLevel, base: { service: "machined" } }, pino.multistream([{ stream: process.stdout }, { stream: sink }]));
  const events = new EventBus();
  const state = new InMemoryState();
  const types = buildRegistry();
  publishDefinitions(state, types);

  const services = new SystemServices({ stateDir: o.stateDir, state, events, enabled: o.services, cgroups: o.serviceOptions?.cgroups, cgroupPrefix: o.cgroupPrefix });
  const prefix = o.cgroupPrefix ?? cgroupPrefixFor(o.stateDir);
  const cgroupV1 = o.kubernetes ? isCgroupV1() : false;
  // The kubelet's cgroup root must exist in every v1 hierarchy before it starts; a sandbox's is a folder of its own.
  if (o.kubernetes && o.sandbox && cgroupV1) {
    // Containers of an earlier run of this node that outlived it (their shims) still hold its data and ports.
    const reaped = reapV1Folder(prefix);
    if (reaped.length) log.warn(`killed ${reaped.length} process(es) an earlier run of this node left in /${prefix}`);
    ensureV1Folder(prefix);
  }
  sink.attach(services.logSink());

  // The install manager needs the node (sequences, reboot) and the node needs the install hooks: both are built
  // here, once, and the hooks reach the manager through this closure.
  let install: InstallManager | undefined;
  const node = new Node({
    stateDir: o.stateDir,
    local: o.local,
    log,
    state,
    events,
    services,
    power: o.power,
    install: {
      beforeBoot: () => install!.hooks().beforeBoot(),
      onFirstApply: async (cfg) => {
        await install!.hooks().onFirstApply(cfg);
        await o.afterFirstInstall?.(node, cfg);
      },
    },
  });
  const criCtr = new Ctr(CRI_CONTAINERD_PATHS.socket);
  install = new InstallManager({
    node,
    stateDir: o.stateDir,
    ctr: () => (services.supervisor.info("containerd")?.state === "Running" ? services.containerd?.ctr : undefined),
    // The kubelet's containerd, for `talosctl image` with the CRI driver (its default) and upgrade-k8s's pre-pulls.
    criCtr: o.kubernetes ? () => (services.supervisor.info("cri")?.state === "Running" ? criCtr : undefined) : undefined,
    leaveEtcd: async () => {
      await services.etcd?.leaveForReset(services.supervisor);
    },
    // A sandbox's etcd keeps its data in the sandbox's /var/lib/etcd, not in the state folder's etcd/.
    ephemeralDirs: o.sandbox && o.kubernetes ? [ETCD_DATA] : [],
    ...o.install,
  });

  let apiEndpoint: { host: string; port: number } | undefined;
  const identity = new ApiIdentity(state, log);
  const trustd = new TrustdService(new TrustdGrpcServer({ state, log, ...(o.trustd ?? { host: o.listen.host, port: o.listen.port === 0 ? 0 : TRUSTD_PORT }) }));
  const runtime = startControllers({
    trustd,
    onWorkerCertStatus: (s) => identity.setWorkerStatus(s),
    apiEndpoint: () => apiEndpoint,
    state,
    log,
    stateDir: o.stateDir,
    volumes: o.volumes,
    setReadiness: (unmet) => node.setControllerReadiness(unmet),
    network: o.network,
    kubernetesRoot: o.kubernetesRoot,
    services,
    serviceOptions: { containerd: o.serviceOptions?.containerd, etcd: o.serviceOptions?.etcd },
    kubernetes: o.kubernetes
      ? { sandbox: o.sandbox ?? false, cgroupV1, cgroupParent: o.sandbox ? `/${prefix}` : undefined, resolvConf: o.sandbox ? "/etc/resolv.conf" : "/system/resolved/resolv.conf" }
      : undefined,
    etcdMemberId: async () => {
      const etcd = services.etcd;
      if (!etcd) throw new Error("etcd is not supervised on this node");
      return (await etcd.status()).memberId;
    },
  });

  // Names and addresses that mean "this node" for `nodes` routing: what the node's resources say it is.
  const localNames = () => {
    const addrs = nodeAddressIPs(readSpec(state, NodeAddressType, NODE_ADDRESS.accumulative));
    const hostname = readSpec(state, HostnameStatusType, HOSTNAME_ID)?.hostname;
    return [...addrs, "127.0.0.1", "::1", "localhost", ...(hostname ? [hostname] : []), o.listen.host];
  };
  const deps: ApiDeps = { node, state, types, log, platform: { name: "metal", mode: "metal" }, localNames, services, runtime, install };
  // The CRI containerd exists only where the node runs Kubernetes (PID 1, a sandbox), at upstream's socket.
  if (o.kubernetes) deps.cri = () => criClient(CRI_CONTAINERD_SOCKET);
  const { api, addr } = await serveApi(deps, o.listen, identity);
  apiEndpoint = { host: addr.address, port: addr.port };
  log.info(
    {
      address: `${addr.address}:${addr.port}`,
      mode: identity.mode?.kind,
      stateDir: o.stateDir,
      ...(o.startedAt !== undefined ? { startupMs: Math.round(performance.now() - o.startedAt) } : {}),
    },
    "machined API listening",
  );

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      identity.stop();
      await runtime.stop().catch(() => {});
      await api.close().catch(() => {});
      await services.shutdown().catch((err) => log.error({ err }, "stopping services failed"));
    })());
  return { node, api, services, install, runtime, state, port: addr.port, log, stop };
}

/**
 * Boots the node and serves the API on `listen`: maintenance or mTLS as the resources say, switching (and rotating
 * the server certificate) as they change. A worker without its API certificate says so in MachineStatus (and in the
 * errors of calls it can't serve).
 */
async function serveApi(deps: ApiDeps, listen: { host: string; port: number }, identity: ApiIdentity): Promise<{ api: ApiServer; addr: AddressInfo }> {
  const { node } = deps;
  const api = new ApiServer(deps);
  api.register(buildServices(deps, api.forwarder));
  identity.onMode((mode) => node.setCondition("apid", mode.kind === "waiting" ? identity.waitingReason() : undefined));
  await node.boot();
  const initial = await identity.initial();
  const addr = await api.listen(listen.host, listen.port, initial);
  identity.start(api);
  node.onRestart(() => api.conns.closeAll());
  return { api, addr };
}
