/**
 * The containerd services, as upstream runs two: `containerd`, the system instance (no CRI; machined's own
 * images, e.g. installer pulls), and `cri`, the instance the kubelet talks to (CRI on; etcd and the kubelet run in
 * its `system` namespace, pods in `k8s.io`). Debian's containerd with a generated config. In plain local mode
 * everything lives under the agent's state folder, so several agents (and tests) never share a socket or a root;
 * on a machine (or in a sandbox) they use upstream's paths. Healthy once the socket answers; the `system` and
 * `k8s.io` namespaces are created on first success.
 */
import { dirname, join } from "node:path";
import { ContainerdVersionClient } from "../../host/containerd-version.js";
import { hostFiles, writeFileAtomic, type Files } from "../../host/files/index.js";
import { ApiError, Code } from "../../machinery/errors.js";
import { Ctr, type ContainerSummary } from "../ctr.js";
import { followFile, type LogReadOptions } from "../logs.js";
import { ProcessRunner } from "../runners/process.js";
import { LOG_LABEL } from "../runners/containerd.js";
import type { HealthSettings, RestartSettings, Runner, Service, ServiceState, StepContext } from "../types.js";

export interface ContainerdPaths {
  root: string;
  state: string;
  socket: string;
  config: string;
}

/** Local mode: under `<stateDir>/containerd`; in the image (stateDir omitted): the usual system paths. */
export function containerdPaths(stateDir?: string): ContainerdPaths {
  if (!stateDir) {
    return {
      root: "/var/lib/containerd",
      state: "/run/containerd",
      socket: "/run/containerd/containerd.sock",
      config: "/run/containerd/config.toml",
    };
  }
  const base = join(stateDir, "containerd");
  return { root: join(base, "root"), state: join(base, "state"), socket: join(base, "run", "containerd.sock"), config: join(base, "config.toml") };
}

/** Upstream's paths of the two instances (constants SystemContainerdAddress, CRIContainerdAddress, ...). */
export const SYSTEM_CONTAINERD_PATHS: ContainerdPaths = {
  root: "/system/var/lib/containerd",
  state: "/system/run/containerd",
  socket: "/system/run/containerd/containerd.sock",
  config: "/system/run/containerd/config.toml",
};
export const CRI_CONTAINERD_PATHS: ContainerdPaths = {
  root: "/var/lib/containerd",
  state: "/run/containerd",
  socket: "/run/containerd/containerd.sock",
  config: "/etc/cri/containerd.toml",
};

export interface ContainerdConfigOptions {
  /** Load the CRI plugin (needed for a kubelet); off makes startup quieter where only ctr is used. */
  cri?: boolean;
  cniBinDir?: string;
  cniConfDir?: string;
  /** hosts.toml folder for registry mirrors (CRI registry.config_path). */
  registryConfigPath?: string;
  /** The pod sandbox image (upstream's DefaultSandboxImage). */
  sandboxImage?: string;
  /**
   * Never ask runc for an oom_score_adj below containerd's own. Hosts that refuse negative scores (this
   * project's sandboxes run on one) otherwise fail every pod sandbox with "can't get final child's PID".
   */
  restrictOomScoreAdj?: boolean;
}

const q = (s: string) => JSON.stringify(s);

/** containerd 1.6 config (version 2). Only what differs from the defaults, plus every default path we must move. */
export function containerdConfig(p: ContainerdPaths, o: ContainerdConfigOptions = {}): string {
  const cri = o.cri ?? true;
  const lines = [
    "version = 2",
    `root = ${q(p.root)}`,
    `state = ${q(p.state)}`,
    `disabled_plugins = ${cri ? "[]" : '["io.containerd.grpc.v1.cri"]'}`,
    "",
    "[grpc]",
    `  address = ${q(p.socket)}`,
    "",
    "[plugins]",
    '  [plugins."io.containerd.internal.v1.opt"]',
    // The default /opt/containerd would escape the state folder.
    `    path = ${q(join(p.root, "opt"))}`,
  ];
  if (cri) {
    lines.push(
      '  [plugins."io.containerd.grpc.v1.cri"]',
      "    disable_tcp_service = true",
      ...(o.sandboxImage ? [`    sandbox_image = ${q(o.sandboxImage)}`] : []),
      ...(o.restrictOomScoreAdj ? ["    restrict_oom_score_adj = true"] : []),
      '  [plugins."io.containerd.grpc.v1.cri".containerd]',
      '    default_runtime_name = "runc"',
      // Naming the runc table without its type leaves the pod runtime unnamed ("container.Runtime.Name must be set").
      '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]',
      '    runtime_type = "io.containerd.runc.v2"',
      '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]',
      // No systemd here or in the image: runc uses the cgroupfs driver.
      "    SystemdCgroup = false",
      '  [plugins."io.containerd.grpc.v1.cri".cni]',
      `    bin_dir = ${q(o.cniBinDir ?? "/usr/lib/cni")}`,
      `    conf_dir = ${q(o.cniConfDir ?? join(p.state, "cni", "net.d"))}`,
    );
    if (o.registryConfigPath) lines.push('  [plugins."io.containerd.grpc.v1.cri".registry]', `    config_path = ${q(o.registryConfigPath)}`);
  }
  return `${lines.join("\n")}\n`;
}

export interface ContainerdServiceOptions extends ContainerdConfigOptions {
  /** `containerd` (the system instance) or `cri`. */
  id?: "containerd" | "cri";
  /** Local mode state folder; omit in the image. */
  stateDir?: string;
  /** Explicit paths (upstream's, on a machine); default from stateDir. */
  paths?: ContainerdPaths;
  binary?: string;
  ctrBin?: string;
  namespaces?: string[];
  health?: Partial<HealthSettings>;
  restart?: Partial<RestartSettings>;
  gracefulStopMs?: number;
  /** Where the directories and config.toml are written (the host's filesystem unless a test says otherwise). */
  files?: Files;
}

export class ContainerdService implements Service {
  readonly id: "containerd" | "cri";
  readonly paths: ContainerdPaths;
  readonly ctr: Ctr;
  /** The health check's channel to the daemon (in process; see host/containerd-version.ts for why not `ctr`). */
  private readonly versionClient: ContainerdVersionClient;
  private namespacesReady = false;

  constructor(private readonly o: ContainerdServiceOptions = {}) {
    this.id = o.id ?? "containerd";
    this.paths = o.paths ?? containerdPaths(o.stateDir && (this.id === "cri" ? join(o.stateDir, "cri") : o.stateDir));
    this.ctr = new Ctr(this.paths.socket, o.ctrBin);
    this.versionClient = new ContainerdVersionClient(this.paths.socket);
  }

  get address(): string {
    return this.paths.socket;
  }

  async pre(_ctx: StepContext): Promise<void> {
    const files = this.o.files ?? hostFiles;
    for (const d of [this.paths.root, this.paths.state, dirname(this.paths.socket), dirname(this.paths.config)]) await files.mkdir(d, { recursive: true, mode: 0o711 });
    await writeFileAtomic(files, this.paths.config, containerdConfig(this.paths, this.o), 0o644);
    this.namespacesReady = false;
  }

  async post(_ctx: StepContext, _state: ServiceState): Promise<void> {
    this.versionClient.close();
  }

  runner(): Runner {
    return new ProcessRunner({ args: [this.o.binary ?? "containerd", "--config", this.paths.config], gracefulStopMs: this.o.gracefulStopMs });
  }

  restart(): Partial<RestartSettings> {
    return this.o.restart ?? {};
  }

  health() {
    return {
      check: async (signal: AbortSignal) => {
        try {
          await this.versionClient.version(signal, 3000);
        } catch (err) {
          // A fresh channel next time: grpc-js would otherwise wait out its reconnect backoff after a restart.
          this.versionClient.close();
          throw err;
        }
        if (!this.namespacesReady) {
          await this.ctr.ensureNamespaces(this.o.namespaces ?? ["system", "k8s.io"], { signal });
          this.namespacesReady = true;
        }
      },
      // The namespaces step (once per start) is a `ctr` spawn: allow more than upstream's in-process 500 ms.
      settings: { initialDelayMs: 200, periodMs: 5000, timeoutMs: 3000, ...this.o.health },
    };
  }

  /** Containers of a namespace for machine.Containers. */
  listContainers(ns: string): Promise<ContainerSummary[]> {
    return this.ctr.listContainers(ns);
  }

  /**
   * Output of a container started by our containerd runner (its log file is recorded in a label).
   * NotFound when the container does not exist or its output is not kept anywhere we know.
   */
  async containerLogs(ns: string, id: string, opts: LogReadOptions = {}): Promise<AsyncIterable<Buffer>> {
    let labels: Record<string, string>;
    try {
      labels = await this.ctr.labels(ns, id);
    } catch {
      throw new ApiError(Code.NotFound, `container ${JSON.stringify(id)} not found`);
    }
    const path = labels[LOG_LABEL];
    if (!path) throw new ApiError(Code.NotFound, `no log kept for container ${JSON.stringify(id)}`);
    return followFile(path, opts);
  }
}
