/**
 * The node's system services: the supervisor, the service logs and cgroups, the Service resources, and the
 * "services" readiness reason. What runs is decided elsewhere: service controllers (src/controllers/*\/\*-service.ts)
 * follow spec resources and call ensure()/remove(); this class only hosts them, so it never reads the config.
 *
 * A reboot stops every service; the stopped supervisor is replaced by a fresh one holding only `machined`, and
 * the controllers, woken by the boot that follows, ensure the others again.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { Writable } from "node:stream";
import { Cgroups, noCgroups, type CgroupManager } from "../host/cgroups.js";
import type { EventBus } from "../state/events.js";
import type { State } from "../state/types.js";
import { LogManager, MachinedService, Supervisor, type ContainerdService, type EtcdService, type Service, type ServiceHost } from "../supervisor/index.js";
import { publishService, unmetServices } from "./services/publish.js";

export interface SystemServicesOptions {
  stateDir: string;
  state: State;
  events: EventBus;
  /** false: no daemons on this host (not root, binaries missing); `machined` stays listed. */
  enabled: boolean;
  /**
   * Default: cgroups under a folder unique to the state folder, so two local nodes never share (or kill) each
   * other's cgroups; none when disabled (there is nothing to contain).
   */
  cgroups?: CgroupManager;
  /** The folder name our cgroups live under (default from the state folder); a sandbox passes its host folder's. */
  cgroupPrefix?: string;
}

/** machined's cgroup folder for a state folder: unique per node, stable across restarts. */
export function cgroupPrefixFor(stateDir: string): string {
  return `machined-${createHash("sha256").update(stateDir).digest("hex").slice(0, 12)}`;
}

export class SystemServices implements ServiceHost {
  readonly logs: LogManager;
  private sup: Supervisor;
  private unsubscribe: () => void = () => {};
  private readonly cgroups: CgroupManager;
  private readonly ownCgroups?: Cgroups;
  private lastReason: string | undefined;
  private readonly readinessCbs = new Set<(reason: string | undefined) => void>();
  private closed = false;

  constructor(private readonly o: SystemServicesOptions) {
    this.logs = new LogManager(join(o.stateDir, "logs"));
    if (o.cgroups) this.cgroups = o.cgroups;
    else if (!o.enabled) this.cgroups = noCgroups;
    else {
      const prefix = o.cgroupPrefix ?? cgroupPrefixFor(o.stateDir);
      this.ownCgroups = new Cgroups({ prefix, log: (m) => this.logs.get("machined").write(`${m}\n`) });
      // Daemons of an earlier run of this state folder that died without stopping them hold its ports.
      this.ownCgroups.reapLeftovers();
      this.cgroups = this.ownCgroups;
    }
    this.sup = this.newSupervisor();
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

  ensure(service: Service, fingerprint: string): Promise<void> {
    if (this.closed || (!this.o.enabled && !service.inProcess)) return Promise.resolve();
    return this.sup.ensure(service, fingerprint);
  }

  remove(id: string): Promise<void> {
    return this.sup.remove(id);
  }

  /** Called with the "services" readiness reason (undefined: every loaded service is up) whenever it changes. */
  onReadiness(cb: (reason: string | undefined) => void): void {
    this.readinessCbs.add(cb);
    cb(this.lastReason);
  }

  /** Where the agent's own log goes so that `talosctl logs machined` shows it. */
  logSink(): Writable {
    return this.logs.writer("machined");
  }

  /** Before a reboot or shutdown: stop every service, then stand up an empty supervisor for the next boot. */
  async stopAll(): Promise<void> {
    await this.sup.shutdown();
    this.unsubscribe();
    if (!this.closed) this.sup = this.newSupervisor();
    this.updateReadiness();
  }

  /** Stop everything for good (the process is ending). */
  async shutdown(): Promise<void> {
    this.closed = true;
    await this.sup.shutdown();
    this.unsubscribe();
    await this.logs.close();
    this.ownCgroups?.removeOwnRoot();
  }

  private newSupervisor(): Supervisor {
    const sup = new Supervisor({ events: this.o.events, logs: this.logs, cgroups: this.cgroups });
    this.unsubscribe = sup.onChange((info) => {
      publishService(this.o.state, info);
      this.updateReadiness();
    });
    sup.load(new MachinedService());
    sup.start("machined");
    return sup;
  }

  private updateReadiness(): void {
    // Every loaded service must be up; one that ran to completion (or had nothing to run) is done, not missing.
    const required = this.sup
      .list()
      .filter((s) => s.state !== "Finished" && s.state !== "Skipped")
      .map((s) => s.id);
    const reason = this.o.enabled ? unmetServices(this.sup, required) : undefined;
    if (reason === this.lastReason) return;
    this.lastReason = reason;
    for (const cb of this.readinessCbs) cb(reason);
  }
}
