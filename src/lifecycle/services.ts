/**
 * The node's system services: owns the supervisor and the service logs, and follows the machine config
 * like upstream's boot sequence does: `machined` always; containerd on every configured node; etcd on
 * control planes (waiting for Bootstrap until its data directory holds a member).
 */
import { createHash } from "node:crypto";
import { accessSync, constants, rmdirSync } from "node:fs";
import * as os from "node:os";
import { delimiter, join } from "node:path";
import type { Writable } from "node:stream";
import { Cgroups, noCgroups, type CgroupManager } from "../host/cgroups.js";
import type { MachineConfig } from "../machinery/config/index.js";
import {
  ContainerdService,
  EtcdService,
  LogManager,
  MachinedService,
  Supervisor,
  type ContainerdServiceOptions,
  type EtcdPki,
  type EtcdServiceOptions,
} from "../supervisor/index.js";
import type { Node } from "./node.js";
import { etcdCAOf, issueEtcdPki } from "./services/etcd-pki.js";
import { publishService, unmetServices } from "./services/publish.js";
import { ApidService, TrustdService, TRUSTD_UNAVAILABLE, type ApiEndpoint } from "./services/api-services.js";

export interface NodeServicesOptions {
  node: Node;
  stateDir: string;
  /** false: load no daemons (tests of other layers, hosts without the binaries); `machined` stays listed. */
  enabled: boolean;
  /** false: never load containerd (etcd-only tests); otherwise extra containerd settings. */
  containerd?: false | Omit<ContainerdServiceOptions, "stateDir">;
  /** Extra etcd settings: ports, listen address, health and restart timing. */
  etcd?: Partial<Omit<EtcdServiceOptions, "stateDir" | "name" | "pki">>;
  /**
   * Default: cgroup v2 under a folder unique to the state folder, so two local nodes never share (or kill)
   * each other's cgroups; none when disabled (there is nothing to contain).
   */
  cgroups?: CgroupManager;
  hostname?: () => string;
  addresses?: () => string[];
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

const DAEMONS = ["etcd", "containerd"];

export class NodeServices {
  readonly logs: LogManager;
  private sup: Supervisor;
  private unsubscribe: () => void = () => {};
  private readonly cgroups: CgroupManager;
  private readonly ownCgroups?: Cgroups;
  private pki: EtcdPki | undefined;
  private pkiKey = "";
  private required: string[] = [];
  private lastReason: string | undefined;
  private queue: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly o: NodeServicesOptions) {
    this.logs = new LogManager(join(o.stateDir, "logs"));
    if (o.cgroups) this.cgroups = o.cgroups;
    else if (!o.enabled) this.cgroups = noCgroups;
    else {
      const prefix = `machined-${createHash("sha256").update(o.stateDir).digest("hex").slice(0, 12)}`;
      this.ownCgroups = new Cgroups({ prefix, log: (m) => this.logs.get("machined").write(`${m}\n`) });
      // Daemons of an earlier run of this state folder that died without stopping them hold its ports.
      this.ownCgroups.reapLeftovers();
      this.cgroups = this.ownCgroups;
    }
    this.sup = this.newSupervisor();
    o.node.addListener({ onConfigChanged: (cfg) => this.follow(cfg) });
    o.node.stopServices = () => this.stopAll();
  }

  get supervisor(): Supervisor {
    return this.sup;
  }

  get enabled(): boolean {
    return this.o.enabled;
  }

  get etcd(): EtcdService | undefined {
    return this.sup.service<EtcdService>("etcd");
  }

  get containerd(): ContainerdService | undefined {
    return this.sup.service<ContainerdService>("containerd");
  }

  /** Where the agent's own log goes so that `talosctl logs machined` shows it. */
  logSink(): Writable {
    return this.logs.writer("machined");
  }

  /** Stop everything for good (the process is ending). */
  async shutdown(): Promise<void> {
    this.closed = true;
    await this.queue;
    await this.sup.shutdown();
    this.unsubscribe();
    await this.logs.close();
    const own = this.ownCgroups;
    if (own?.root) {
      try {
        rmdirSync(join(own.root, own.prefix));
      } catch {
        // Never created, or still busy: harmless, and the next start reuses it.
      }
    }
  }

  private newSupervisor(): Supervisor {
    const sup = new Supervisor({ events: this.o.node.events, logs: this.logs, cgroups: this.cgroups });
    this.unsubscribe = sup.onChange((info) => {
      publishService(this.o.node.state, info);
      this.updateReadiness();
    });
    sup.load(new MachinedService());
    sup.start("machined");
    return sup;
  }

  /**
   * Before a reboot or shutdown: stop every service. A stopped supervisor stays stopped, so a fresh one
   * (with only `machined`) takes its place; the config activation after the simulated reboot reloads the rest.
   */
  private async stopAll(): Promise<void> {
    await this.queue;
    await this.sup.shutdown();
    this.unsubscribe();
    this.required = [];
    this.updateReadiness();
    if (!this.closed) this.sup = this.newSupervisor();
  }

  /** Serialised: config changes can arrive faster than daemons stop. Never throws into the apply path. */
  private follow(cfg: MachineConfig | undefined): Promise<void> {
    const run = this.queue
      .then(() => this.reconcile(cfg))
      .catch((err) => this.o.node.log.error({ err }, "services: failed to follow the machine config"));
    this.queue = run;
    return run;
  }

  private async reconcile(cfg: MachineConfig | undefined): Promise<void> {
    if (this.closed) return;
    const type = cfg?.machineType();
    const controlPlane = type === "controlplane" || type === "init";
    const want = new Set<string>();
    if (this.o.enabled && (controlPlane || type === "worker")) {
      if (this.o.containerd !== false) want.add("containerd");
      // Without an etcd CA there is nothing to run; Bootstrap reports "etcd is not configured".
      if (controlPlane && etcdCAOf(cfg)) want.add("etcd");
    }
    const drop = DAEMONS.filter((id) => this.sup.has(id) && !want.has(id));
    if (drop.length > 0) await this.sup.unload(...drop);
    if (want.has("etcd")) await this.refreshPki(cfg as MachineConfig);
    const sup = this.sup;
    if (want.has("containerd") && !sup.has("containerd")) {
      sup.load(new ContainerdService({ ...(this.o.containerd || {}), stateDir: this.o.stateDir }));
      sup.start("containerd");
    }
    if (want.has("etcd") && !sup.has("etcd")) {
      sup.load(
        new EtcdService({
          addresses: () => this.addresses(),
          ...this.o.etcd,
          stateDir: this.o.stateDir,
          name: this.hostname(cfg),
          pki: () => this.pki,
        }),
      );
      sup.start("etcd");
    }
    this.required = [...want];
    this.updateReadiness();
    await this.reconcileApiServices(controlPlane, type === "worker");
  }

  // --- API services (services/api-services.ts): apid on configured nodes, trustd listed on control planes ---
  private apiEndpoint: ApiEndpoint | undefined;

  /** Where the API listens, for apid's health check (set by the entry wiring once it listens). */
  setApiEndpoint(ep: ApiEndpoint): void {
    this.apiEndpoint = ep;
  }

  private async reconcileApiServices(controlPlane: boolean, worker: boolean): Promise<void> {
    const want = new Set<string>();
    if (controlPlane || worker) want.add("apid");
    if (controlPlane) want.add("trustd");
    const drop = ["apid", "trustd"].filter((id) => this.sup.has(id) && !want.has(id));
    if (drop.length > 0) await this.sup.unload(...drop);
    if (want.has("apid") && !this.sup.has("apid")) {
      this.sup.load(new ApidService(() => this.apiEndpoint));
      this.sup.start("apid");
    }
    if (want.has("trustd") && !this.sup.has("trustd")) {
      this.sup.load(new TrustdService());
      this.logs.get("trustd").write(`trustd: waiting for ${TRUSTD_UNAVAILABLE}\n`);
      this.sup.start("trustd");
    }
  }
  // --- end API services ---

  /** Re-issue the etcd certificates when the CA or the hostname changed; etcd picks them up on its next start. */
  private async refreshPki(cfg: MachineConfig): Promise<void> {
    const ca = etcdCAOf(cfg) as { crt: string; key: string };
    const hostname = this.hostname(cfg);
    const key = `${ca.crt}\n${ca.key}\n${hostname}`;
    if (key === this.pkiKey && this.pki) return;
    this.pki = await issueEtcdPki(ca, hostname, this.addresses());
    this.pkiKey = key;
  }

  private hostname(cfg: MachineConfig | undefined): string {
    return cfg?.hostname() ?? this.o.hostname?.() ?? os.hostname();
  }

  private addresses(): string[] {
    return this.o.addresses?.() ?? ["127.0.0.1"];
  }

  private updateReadiness(): void {
    const reason = this.o.enabled ? unmetServices(this.sup, this.required) : undefined;
    if (reason === this.lastReason) return;
    this.lastReason = reason;
    this.o.node.setCondition("services", reason);
  }
}
