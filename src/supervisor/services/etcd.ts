/**
 * The etcd service, with mutual TLS: on a machine (and in a local-mode sandbox) etcd from its image as a container
 * in the CRI containerd's `system` namespace, as upstream, with /var/lib/etcd and /system/secrets/etcd; in plain
 * local mode Debian's etcd as a process with its data under the state folder.
 *
 * Bootstrap follows upstream: a control plane with an empty data directory does not start etcd on its
 * own; it waits (visibly, in Waiting) until `bootstrap()` is called, which starts a new single-member
 * cluster (optionally restored from a snapshot). A non-empty data directory starts directly, e.g. after
 * the agent restarts.
 */
import { existsSync, mkdirSync, readdirSync, rmdirSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ApiError, Code } from "../../machinery/errors.js";
import { runTool } from "../exec.js";
import { EtcdClient, type EtcdAlarmInfo, type EtcdMemberInfo, type EtcdMemberStatusInfo } from "../etcd/client.js";
import { forfeitLeadership, leaveCluster, removeMemberById } from "../etcd/ops.js";
import { ProcessRunner } from "../runners/process.js";
import { ContainerdRunner } from "../runners/containerd.js";
import { ensureImage, type Ctr, type ImageSource } from "../ctr.js";
import type { Supervisor } from "../supervisor.js";
import { ServiceState, type Condition, type HealthSettings, type RestartSettings, type Runner, type Service, type StepContext } from "../types.js";

/** PEM material issued from the cluster's etcd CA. The client pair is what the agent itself uses. */
export interface EtcdPki {
  ca: string;
  serverCert: string;
  serverKey: string;
  peerCert: string;
  peerKey: string;
  clientCert: string;
  clientKey: string;
}

export type MachineType = "init" | "controlplane" | "worker" | "unknown" | undefined;

/** What etcd runs as (the EtcdSpec resource): member name, addresses, flags. Read again at every start. */
export interface EtcdRunSpec {
  name: string;
  advertisedAddresses: string[];
  listenPeerAddresses: string[];
  listenClientAddresses: string[];
  extraArgs: Record<string, { values: string[] }>;
}

/** etcd as a container: the image from EtcdSpec, in the CRI containerd. */
export interface EtcdContainer {
  ctr: Ctr;
  /** containerd namespace (upstream: system). */
  namespace: string;
  image: () => string;
  source?: ImageSource;
  /** The container's cgroup (upstream: /podruntime/etcd). */
  cgroup?: string;
}

export interface EtcdServiceOptions {
  /** Data in <stateDir>/etcd, PEMs in <stateDir>/etcd-pki, uploaded recovery snapshot at <stateDir>/etcd.snapshot. */
  stateDir: string;
  dataDir?: string;
  pkiDir?: string;
  recoverySnapshotPath?: string;
  /** Run etcd from its image (data and PEM folders mounted at upstream's paths) instead of the etcd binary. */
  container?: EtcdContainer;
  /** The current EtcdSpec; undefined while it is not derived yet. */
  spec: () => EtcdRunSpec | undefined;
  /** Absent (or returning undefined) means etcd is not configured. */
  pki?: EtcdPki | (() => EtcdPki | undefined);
  /** Ports other than upstream's 2379/2380 (tests running several members on one host). */
  clientPort?: number;
  peerPort?: number;
  binary?: string;
  etcdctl?: string;
  /** Extra etcd flags without the leading dashes, e.g. { "heartbeat-interval": "10" }. */
  extraArgs?: Record<string, string>;
  dependsOn?: string[];
  conditions?: Condition[];
  health?: Partial<HealthSettings>;
  restart?: Partial<RestartSettings>;
  gracefulStopMs?: number;
}

export interface BootstrapRequest {
  /** The node's machine type; only control planes (init/controlplane) may bootstrap. */
  machineType: MachineType;
  /** Restore from this snapshot (default with recover: the uploaded snapshot at recoverySnapshotPath). */
  recoverFrom?: string;
  recover?: boolean;
  skipHashCheck?: boolean;
}

/** Where the container sees its PEM files and data (upstream's EtcdPKIPath and EtcdDataPath). */
const CONTAINER_PKI = "/system/secrets/etcd";
const CONTAINER_DATA = "/var/lib/etcd";

export const WAITING_TO_JOIN =
  "etcd is waiting to join the cluster, if this node is the first node in the cluster, please run `talosctl bootstrap` against one of the following IPs:";

export class EtcdService implements Service {
  readonly id = "etcd";
  /**
   * Upstream refuses `talosctl service etcd restart`; we allow it because operators reach for it when
   * etcd misbehaves and, with no shell, there is no other way. Start/stop stay refused: a stopped etcd
   * on a control plane is a broken node.
   */
  readonly api = { restart: true };
  readonly dataDir: string;
  readonly pkiDir: string;
  /** Where the EtcdRecover RPC stores the uploaded snapshot. */
  readonly recoverySnapshotPath: string;
  private bootstrapRequested = false;
  private recoverFrom: string | null = null;
  private skipHashCheck = false;
  private release: (() => void) | null = null;
  private cachedClient: EtcdClient | null = null;

  constructor(private readonly o: EtcdServiceOptions) {
    this.dataDir = o.dataDir ?? join(o.stateDir, "etcd");
    this.pkiDir = o.pkiDir ?? join(o.stateDir, "etcd-pki");
    this.recoverySnapshotPath = o.recoverySnapshotPath ?? join(o.stateDir, "etcd.snapshot");
  }

  get clientPort(): number {
    return this.o.clientPort ?? 2379;
  }

  get peerPort(): number {
    return this.o.peerPort ?? 2380;
  }

  private runSpec(): EtcdRunSpec {
    const spec = this.o.spec();
    if (!spec) throw new Error("etcd spec is not available yet (waiting for the node's hostname and addresses)");
    return spec;
  }

  /** The endpoint the agent talks to: loopback, on which the client port always listens. */
  get localEndpoint(): string {
    return `https://127.0.0.1:${this.clientPort}`;
  }

  get peerUrl(): string {
    return `https://${hostPort(this.runSpec().advertisedAddresses[0], this.peerPort)}`;
  }

  pki(): EtcdPki | undefined {
    return typeof this.o.pki === "function" ? this.o.pki() : this.o.pki;
  }

  dataDirEmpty(): boolean {
    try {
      return readdirSync(this.dataDir).length === 0;
    } catch {
      return true;
    }
  }

  dependsOn(): string[] {
    return this.o.dependsOn ?? [];
  }

  conditions(): Condition[] {
    return this.o.conditions ?? [];
  }

  restart(): Partial<RestartSettings> {
    return { policy: "forever", ...this.o.restart };
  }

  async pre(ctx: StepContext): Promise<void> {
    const c = this.o.container;
    if (c) {
      ctx.event(ServiceState.Preparing, `Pulling image ${c.image()}`);
      await ensureImage(c.ctr, c.namespace, c.image(), c.source, ctx.signal);
    }
    const pki = this.pki();
    if (!pki) throw new Error("etcd is not configured: no PKI");
    this.writePki(pki);
    mkdirSync(this.dataDir, { recursive: true, mode: 0o700 });
    if (this.dataDirEmpty() && !this.bootstrapRequested) {
      const ips = this.o.spec()?.advertisedAddresses ?? [];
      ctx.event(ServiceState.Waiting, `${WAITING_TO_JOIN} [${ips.join(" ")}]`);
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(ctx.signal.reason);
        this.release = () => {
          ctx.signal.removeEventListener("abort", onAbort);
          resolve();
        };
        if (ctx.signal.aborted) onAbort();
        else ctx.signal.addEventListener("abort", onAbort, { once: true });
      }).finally(() => (this.release = null));
      ctx.event(ServiceState.Preparing, "Bootstrap requested");
    }
    if (this.recoverFrom && this.dataDirEmpty()) await this.restore(ctx);
  }

  runner(): Runner {
    const c = this.o.container;
    if (!c) return new ProcessRunner({ args: [this.o.binary ?? "etcd", ...this.args()], gracefulStopMs: this.o.gracefulStopMs });
    return new ContainerdRunner({
      address: c.ctr.address,
      namespace: c.namespace,
      containerId: this.id,
      image: c.image(),
      args: ["/usr/local/bin/etcd", ...this.args()],
      mounts: [
        { src: this.pkiDir, dst: CONTAINER_PKI, options: ["rbind", "ro"] },
        { src: this.dataDir, dst: CONTAINER_DATA, options: ["rbind", "rw"] },
      ],
      netHost: true,
      cgroup: c.cgroup,
      gracefulStopMs: this.o.gracefulStopMs,
    });
  }

  health() {
    return {
      check: (signal: AbortSignal) => this.client().health(signal),
      // Upstream etcd settings: first check after 5 s, every 20 s, 15 s to answer.
      settings: { initialDelayMs: 5000, periodMs: 20_000, timeoutMs: 15_000, ...this.o.health },
    };
  }

  /** etcd flags for the current data directory state. */
  args(): string[] {
    const pkiDir = this.o.container ? CONTAINER_PKI : this.pkiDir;
    const p = (f: string) => join(pkiDir, f);
    const spec = this.runSpec();
    const urls = (addrs: string[], port: number) => addrs.map((a) => `https://${hostPort(a, port)}`).join(",");
    const a: Record<string, string> = {
      name: spec.name,
      "data-dir": this.o.container ? CONTAINER_DATA : this.dataDir,
      "listen-client-urls": urls(spec.listenClientAddresses, this.clientPort),
      "advertise-client-urls": urls(spec.advertisedAddresses, this.clientPort),
      "listen-peer-urls": urls(spec.listenPeerAddresses, this.peerPort),
      "initial-advertise-peer-urls": this.peerUrl,
      "auto-tls": "false",
      "peer-auto-tls": "false",
      "client-cert-auth": "true",
      "cert-file": p("server.crt"),
      "key-file": p("server.key"),
      "trusted-ca-file": p("ca.crt"),
      "peer-client-cert-auth": "true",
      "peer-cert-file": p("peer.crt"),
      "peer-key-file": p("peer.key"),
      "peer-trusted-ca-file": p("ca.crt"),
      // Debian's 3.4 defaults to the deprecated capnslog logger (the image's 3.7 only has zap).
      ...(this.o.container ? {} : { logger: "zap" }),
    };
    // Cluster membership flags only matter for an empty data directory (a new cluster).
    if (this.dataDirEmpty()) {
      a["initial-cluster"] = `${spec.name}=${this.peerUrl}`;
      a["initial-cluster-state"] = "new";
    }
    for (const [k, v] of Object.entries(spec.extraArgs)) a[k] = v.values.join(",");
    Object.assign(a, this.o.extraArgs);
    return Object.entries(a).map(([k, v]) => `--${k}=${v}`);
  }

  /**
   * The Bootstrap RPC. Checks in upstream order, then lets the waiting service start a new cluster (or
   * starts the service if it is not running).
   */
  async bootstrap(sup: Supervisor, req: BootstrapRequest): Promise<void> {
    if (!req.machineType || req.machineType === "unknown") throw new ApiError(Code.Unimplemented, "machine type is not set, cannot use bootstrap API");
    if (req.machineType === "worker") throw new ApiError(Code.Unimplemented, "bootstrap is only available on control plane nodes");
    if (!this.pki()) throw new ApiError(Code.InvalidArgument, "etcd is not configured, bootstrap is not possible");
    if (!this.dataDirEmpty()) throw new ApiError(Code.AlreadyExists, "etcd data directory is not empty");
    const snapshot = req.recoverFrom ?? (req.recover ? this.recoverySnapshotPath : null);
    if (snapshot && !existsSync(snapshot)) throw new ApiError(Code.FailedPrecondition, `etcd recovery snapshot ${snapshot} not found`);
    this.recoverFrom = snapshot;
    this.skipHashCheck = req.skipHashCheck ?? false;
    this.bootstrapRequested = true;
    if (this.release) this.release();
    else if (!sup.isRunning(this.id)) sup.start(this.id);
  }

  /** A client with the agent's etcd client certificate, for the local member. */
  client(): EtcdClient {
    if (this.cachedClient) return this.cachedClient;
    const pki = this.pki();
    if (!pki) throw new ApiError(Code.FailedPrecondition, "etcd is not configured");
    this.cachedClient = new EtcdClient(this.localEndpoint, { ca: pki.ca, cert: pki.clientCert, key: pki.clientKey });
    return this.cachedClient;
  }

  // --- RPC operations (the handlers add the control-plane check and wrap the results) ---

  memberList(): Promise<EtcdMemberInfo[]> {
    return this.client().memberList();
  }

  async status(): Promise<EtcdMemberStatusInfo> {
    try {
      return await this.client().status();
    } catch (e) {
      throw prefixed("failed to query etcd status", e);
    }
  }

  async alarmList(): Promise<EtcdAlarmInfo[]> {
    try {
      return await this.client().alarmList();
    } catch (e) {
      throw prefixed("failed to list etcd alarms", e);
    }
  }

  async alarmDisarm(): Promise<EtcdAlarmInfo[]> {
    try {
      return await this.client().alarmDisarm();
    } catch (e) {
      throw prefixed("failed to disarm etcd alarm", e);
    }
  }

  async defragment(): Promise<void> {
    try {
      await this.client().defragment();
    } catch (e) {
      throw prefixed("failed to defragment etcd", e);
    }
  }

  forfeitLeadership(): Promise<string> {
    return forfeitLeadership(this.client());
  }

  removeMemberById(id: bigint): Promise<void> {
    return removeMemberById(this.client(), id);
  }

  /** Remove this member, stop the service and empty the data directory. */
  async leaveCluster(sup: Supervisor): Promise<void> {
    await leaveCluster(this.client(), () => sup.stop(this.id), this.dataDir);
    // A later start must wait to join (or for a new bootstrap), not silently found a new cluster.
    this.bootstrapRequested = false;
  }

  /** A genuine snapshot stream (bbolt + sha256 trailer: size % 512 == 32). */
  snapshot(signal?: AbortSignal): AsyncIterable<Buffer> {
    return this.client().snapshot(signal);
  }

  private writePki(pki: EtcdPki): void {
    mkdirSync(this.pkiDir, { recursive: true, mode: 0o700 });
    const files: Record<string, string> = {
      "ca.crt": pki.ca,
      "server.crt": pki.serverCert,
      "server.key": pki.serverKey,
      "peer.crt": pki.peerCert,
      "peer.key": pki.peerKey,
    };
    for (const [f, pem] of Object.entries(files)) writeFileSync(join(this.pkiDir, f), pem, { mode: 0o600 });
    // A new PKI needs a new client (new agent keys).
    this.cachedClient?.close();
    this.cachedClient = null;
  }

  private async restore(ctx: StepContext): Promise<void> {
    const snap = this.recoverFrom as string;
    const name = this.runSpec().name;
    ctx.event(ServiceState.Preparing, `Recovering etcd from snapshot ${snap}`);
    // etcdctl refuses an existing data directory, even an empty one.
    rmdirSync(this.dataDir);
    const args = [
      this.o.etcdctl ?? "etcdctl",
      "snapshot",
      "restore",
      snap,
      `--name=${name}`,
      `--data-dir=${this.dataDir}`,
      `--initial-cluster=${name}=${this.peerUrl}`,
      `--initial-advertise-peer-urls=${this.peerUrl}`,
    ];
    if (this.skipHashCheck) args.push("--skip-hash-check");
    try {
      await runTool(args, { env: { ETCDCTL_API: "3" }, signal: ctx.signal, timeoutMs: 300_000 });
    } catch (e) {
      mkdirSync(this.dataDir, { recursive: true, mode: 0o700 });
      throw new Error(`error recovering from the snapshot: ${(e as Error).message}`);
    } finally {
      this.recoverFrom = null;
    }
    // Upstream deletes the uploaded snapshot once restored.
    if (snap === this.recoverySnapshotPath) unlinkSync(snap);
  }
}

/** host:port with IPv6 addresses bracketed. */
export function hostPort(addr: string, port: number): string {
  return addr.includes(":") ? `[${addr}]:${port}` : `${addr}:${port}`;
}

function prefixed(prefix: string, e: unknown): Error {
  if (e instanceof ApiError) return new ApiError(e.code, `${prefix}: ${e.message}`);
  return new Error(`${prefix}: ${(e as Error).message}`);
}
