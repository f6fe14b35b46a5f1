/**
 * The etcd service, with mutual TLS: on a machine (and in a local-mode sandbox) etcd from its image as a container
 * in the CRI containerd's `system` namespace, as upstream, with /var/lib/etcd and /system/secrets/etcd; in plain
 * local mode Debian's etcd as a process with its data under the state folder.
 *
 * Bootstrap and join follow upstream: a control plane with an empty data directory does not found a cluster on
 * its own. It tries to join the existing one through the other control planes (src/supervisor/etcd/join.ts: a
 * learner first, promoted once etcd runs), and says it is waiting to join (visibly, in Waiting) until that works
 * or `bootstrap()` is called, which starts a new single-member cluster instead (optionally restored from a
 * snapshot). A non-empty data directory starts directly, e.g. after the agent restarts.
 */
import { join } from "node:path";
import { hostFiles, isNotFound, type Files } from "../../host/files/index.js";
import { ApiError, Code } from "../../machinery/errors.js";
import { runTool } from "../exec.js";
import { EtcdClient, type EtcdAlarmInfo, type EtcdMemberInfo, type EtcdMemberStatusInfo } from "../etcd/client.js";
import { defaultJoinSettings, buildInitialCluster, promoteMember, removeQuietly, type JoinEnv, type JoinPlan, type JoinSettings } from "../etcd/join.js";
import { forfeitLeadership, formatMemberId, leaveCluster, removeMemberById } from "../etcd/ops.js";
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
  /**
   * The other control planes' etcd client endpoints (host:port; upstream: every merged control-plane Endpoints
   * address on 2379), read again at each use. With them an empty data directory joins the existing cluster, and
   * leaving or removing a member goes through the cluster. Without them the service only waits for bootstrap.
   */
  controlPlaneEndpoints?: () => string[];
  /** Join and promotion timings (upstream's by default). */
  join?: Partial<JoinSettings>;
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
  /** The data, PEM and snapshot folders (the host's filesystem unless a test says otherwise). */
  files?: Files;
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
  /** Set by a successful join: the membership etcd starts with, and the learner to promote. */
  private joinPlan: JoinPlan | null = null;
  private readonly joinSettings: JoinSettings;
  private readonly files: Files;
  /** Whether the data directory was empty when etcd last started (what its membership flags depend on). */
  private startsEmpty = true;

  constructor(private readonly o: EtcdServiceOptions) {
    this.dataDir = o.dataDir ?? join(o.stateDir, "etcd");
    this.pkiDir = o.pkiDir ?? join(o.stateDir, "etcd-pki");
    this.recoverySnapshotPath = o.recoverySnapshotPath ?? join(o.stateDir, "etcd.snapshot");
    this.joinSettings = { ...defaultJoinSettings, ...o.join };
    this.files = o.files ?? hostFiles;
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
    return this.peerUrls().join(",");
  }

  /** One peer URL per advertised address (upstream getEtcdURLs). */
  peerUrls(): string[] {
    return this.runSpec().advertisedAddresses.map((a) => `https://${hostPort(a, this.peerPort)}`);
  }

  pki(): EtcdPki | undefined {
    return typeof this.o.pki === "function" ? this.o.pki() : this.o.pki;
  }

  /** A missing data directory counts as empty; any other error reading it is not taken as empty. */
  async dataDirEmpty(): Promise<boolean> {
    try {
      return (await this.files.readdir(this.dataDir)).length === 0;
    } catch (e) {
      if (isNotFound(e)) return true;
      throw new Error(`reading the etcd data directory ${this.dataDir}: ${(e as Error).message}`);
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
    if (!this.pki()) throw new Error("etcd is not configured: no PKI");
    await this.files.mkdir(this.dataDir, { recursive: true, mode: 0o700 });
    this.joinPlan = null;
    if ((await this.dataDirEmpty()) && !this.bootstrapRequested) await this.waitToJoin(ctx);
    // Written once the membership is settled: a PKI fixed while waiting (a wrong etcd CA) is the one etcd gets.
    const pki = this.pki();
    if (!pki) throw new Error("etcd is not configured: no PKI");
    await this.writePki(pki);
    if (this.recoverFrom && (await this.dataDirEmpty())) await this.restore(ctx);
    this.startsEmpty = await this.dataDirEmpty();
  }

  /**
   * Until a bootstrap request or a successful join: join attempts through the control planes (when this node
   * knows them), each failure reported once as an event and every attempt in the service log.
   */
  private async waitToJoin(ctx: StepContext): Promise<void> {
    const ips = this.o.spec()?.advertisedAddresses ?? [];
    const waiting = `${WAITING_TO_JOIN} [${ips.join(" ")}]`;
    ctx.event(ServiceState.Waiting, waiting);
    const bootstrap = new AbortController();
    this.release = () => bootstrap.abort(new Error("bootstrap requested"));
    const signal = AbortSignal.any([ctx.signal, bootstrap.signal]);
    const endpoints = this.o.controlPlaneEndpoints;
    try {
      if (!endpoints) await aborted(signal);
      else {
        const progress = {
          waiting: () => ctx.log.write(`${waiting}\n`),
          failed: (e: Error) => ctx.event(ServiceState.Waiting, `etcd join attempt failed: ${e.message}`),
        };
        this.joinPlan = await buildInitialCluster(this.joinEnv(ctx, endpoints), signal, progress, this.joinSettings);
      }
    } catch (e) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      if (!bootstrap.signal.aborted) throw new Error(`failed to build initial etcd cluster: ${(e as Error).message}`);
    } finally {
      this.release = null;
    }
    if ((ctx.signal.aborted || bootstrap.signal.aborted) && this.joinPlan) {
      // Stopped, or asked to bootstrap, just as the join went through: nobody will run the learner that was added.
      await this.removeLearner(this.joinPlan.learnerId);
      this.joinPlan = null;
    }
    if (ctx.signal.aborted) throw ctx.signal.reason;
    if (!this.joinPlan) ctx.event(ServiceState.Preparing, "Bootstrap requested");
    else ctx.event(ServiceState.Preparing, `Joining the etcd cluster as learner ${formatMemberId(this.joinPlan.learnerId)}`);
  }

  private joinEnv(ctx: StepContext, endpoints: () => string[]): JoinEnv {
    return {
      name: this.runSpec().name,
      peerUrls: this.peerUrls(),
      endpoints,
      client: (list) => this.newClient(list),
      log: (line) => ctx.log.write(`${line}\n`),
      notice: (msg) => ctx.event(ServiceState.Waiting, msg),
    };
  }

  private async removeLearner(id: bigint): Promise<void> {
    const endpoints = this.o.controlPlaneEndpoints?.() ?? [];
    if (endpoints.length === 0) return;
    const c = this.newClient(endpoints);
    try {
      await removeQuietly(c, id);
    } finally {
      c.close();
    }
  }

  /** A client with the agent's etcd client certificate for `endpoints`. */
  private newClient(endpoints: string[]): EtcdClient {
    const pki = this.pki();
    if (!pki) throw new ApiError(Code.FailedPrecondition, "etcd is not configured");
    return new EtcdClient(endpoints, { ca: pki.ca, cert: pki.clientCert, key: pki.clientKey });
  }

  /**
   * The cluster through the other control planes first and the local member last: a member removed (or leaving)
   * through itself may stop before it answers.
   */
  private clusterClient(): EtcdClient {
    const own = new Set((this.o.spec()?.advertisedAddresses ?? []).map((a) => hostPort(a, this.clientPort)));
    const others = (this.o.controlPlaneEndpoints?.() ?? []).filter((e) => !own.has(endpointHostPort(e)));
    return this.newClient([...others, this.localEndpoint]);
  }

  runner(ctx: StepContext): Runner {
    const plan = this.joinPlan;
    const endpoints = this.o.controlPlaneEndpoints;
    if (plan && endpoints) {
      // Runs alongside etcd until the learner is a voter; ends with the service.
      void promoteMember(this.joinEnv(ctx, endpoints), plan.learnerId, ctx.signal, this.joinSettings).then(
        () => ctx.log.write(`successfully promoted etcd member ${formatMemberId(plan.learnerId)}\n`),
        (e: Error) => {
          if (!ctx.signal.aborted) ctx.log.write(`failed promoting member: ${e.message}\n`);
        },
      );
    }
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
      // A quorum read, as upstream: a learner fails it until promoted, so nothing uses it as a full member before.
      check: (signal: AbortSignal) => this.client().validateQuorum(signal),
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
    // Cluster membership flags only matter for an empty data directory: a new cluster, or the one joined.
    if (this.startsEmpty) {
      const plan = this.joinPlan;
      a["initial-cluster"] = plan ? plan.initialCluster : this.peerUrls().map((u) => `${spec.name}=${u}`).join(",");
      a["initial-cluster-state"] = plan ? "existing" : "new";
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
    if (!(await this.dataDirEmpty())) throw new ApiError(Code.AlreadyExists, "etcd data directory is not empty");
    const snapshot = req.recoverFrom ?? (req.recover ? this.recoverySnapshotPath : null);
    if (snapshot && !(await this.files.exists(snapshot))) throw new ApiError(Code.FailedPrecondition, `etcd recovery snapshot ${snapshot} not found`);
    this.recoverFrom = snapshot;
    this.skipHashCheck = req.skipHashCheck ?? false;
    this.bootstrapRequested = true;
    if (this.release) this.release();
    else if (!sup.isRunning(this.id)) sup.start(this.id);
  }

  /** A client with the agent's etcd client certificate, for the local member. */
  client(): EtcdClient {
    this.cachedClient ??= this.newClient([this.localEndpoint]);
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

  /** Through the cluster (upstream: the control-plane endpoints), so any member can be removed from any node. */
  async removeMemberById(id: bigint): Promise<void> {
    const c = this.clusterClient();
    try {
      await removeMemberById(c, id);
    } finally {
      c.close();
    }
  }

  /** Remove this member (through the cluster), stop the service and empty the data directory (upstream LeaveCluster). */
  async leaveCluster(sup: Supervisor): Promise<void> {
    const c = this.clusterClient();
    try {
      await leaveCluster(c, () => this.client().status(), () => sup.stop(this.id), this.dataDir, undefined, this.files);
    } finally {
      c.close();
    }
    // A later start must wait to join (or for a new bootstrap), not silently found a new cluster.
    this.bootstrapRequested = false;
    this.joinPlan = null;
  }

  /**
   * The graceful reset's leaveEtcd task: only a node that holds member data and whose etcd runs (or is stopping,
   * or failed) leaves; one that never joined has nothing to remove.
   */
  async leaveForReset(sup: Supervisor): Promise<void> {
    if (!(await this.files.exists(join(this.dataDir, "member")))) return;
    const state = sup.info(this.id)?.state;
    if (state !== "Running" && state !== "Stopping" && state !== "Failed") return;
    await this.leaveCluster(sup);
  }

  /** A genuine snapshot stream (bbolt + sha256 trailer: size % 512 == 32). */
  snapshot(signal?: AbortSignal): AsyncIterable<Buffer> {
    return this.client().snapshot(signal);
  }

  private async writePki(pki: EtcdPki): Promise<void> {
    await this.files.mkdir(this.pkiDir, { recursive: true, mode: 0o700 });
    const files: Record<string, string> = {
      "ca.crt": pki.ca,
      "server.crt": pki.serverCert,
      "server.key": pki.serverKey,
      "peer.crt": pki.peerCert,
      "peer.key": pki.peerKey,
    };
    for (const [f, pem] of Object.entries(files)) await this.files.writeFile(join(this.pkiDir, f), pem, { mode: 0o600 });
    // A new PKI needs a new client (new agent keys).
    this.cachedClient?.close();
    this.cachedClient = null;
  }

  private async restore(ctx: StepContext): Promise<void> {
    const snap = this.recoverFrom as string;
    const name = this.runSpec().name;
    ctx.event(ServiceState.Preparing, `Recovering etcd from snapshot ${snap}`);
    // etcdctl refuses an existing data directory, even an empty one (it is empty here: checked in pre()).
    await this.files.rm(this.dataDir, { recursive: true, force: true });
    const args = [
      this.o.etcdctl ?? "etcdctl",
      "snapshot",
      "restore",
      snap,
      `--name=${name}`,
      `--data-dir=${this.dataDir}`,
      `--initial-cluster=${this.peerUrls().map((u) => `${name}=${u}`).join(",")}`,
      `--initial-advertise-peer-urls=${this.peerUrl}`,
    ];
    if (this.skipHashCheck) args.push("--skip-hash-check");
    try {
      await runTool(args, { env: { ETCDCTL_API: "3" }, signal: ctx.signal, timeoutMs: 300_000 });
    } catch (e) {
      await this.files.mkdir(this.dataDir, { recursive: true, mode: 0o700 });
      throw new Error(`error recovering from the snapshot: ${(e as Error).message}`);
    } finally {
      this.recoverFrom = null;
    }
    // Upstream deletes the uploaded snapshot once restored.
    if (snap === this.recoverySnapshotPath) await this.files.rm(snap, { force: true });
  }
}

/** Settles (rejecting with the reason) once `signal` aborts. */
function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

/** "host:port" (IPv6 bracketed) of "host:port", "[v6]:port" or a URL. */
function endpointHostPort(e: string): string {
  try {
    const u = new URL(/^[a-z]+:\/\//.test(e) ? e : `https://${e}`);
    return `${u.hostname}:${u.port || "2379"}`;
  } catch {
    return e;
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
