/**
 * The service registry (upstream system.Services): load, start, stop, restart, list, wait. State changes
 * are published on the EventBus as machine.ServiceStateEvent and handed to onChange callbacks, which the
 * lead uses to keep the Service resources current.
 */
import { ServiceStateEventSchema } from "../machinery/api/gen/machine/machine_pb.js";
import { ApiError, Code } from "../machinery/errors.js";
import { Cgroups, type CgroupManager } from "../host/cgroups.js";
import type { EventBus } from "../state/events.js";
import { sleep } from "./health.js";
import { LogManager, type LogReadOptions } from "./logs.js";
import { toServiceStateEvent } from "./proto.js";
import { ServiceRunner } from "./service-runner.js";
import { ServiceState, stateName, type Condition, type HealthStatus, type Service, type ServiceInfoData } from "./types.js";

export interface SupervisorOptions {
  events?: EventBus;
  /** Default: memory-only logs. The lead passes new LogManager(`${state}/logs`). */
  logs?: LogManager;
  /** Default: detected cgroup v2 with prefix "machined". */
  cgroups?: CgroupManager;
  waitDescribeIntervalMs?: number;
  /** Transition lines ("service[etcd](Running): ..."); default: appended to the machined log. */
  log?: (line: string) => void;
}

export type ServiceCondition = "up" | "down" | "finished";

/** Upstream waits at most this long for dependents to stop before stopping a dependency anyway. */
const REVERSE_DEP_WAIT_MS = 30_000;

export class Supervisor {
  readonly logs: LogManager;
  private readonly runners = new Map<string, ServiceRunner>();
  /** What each service was last ensured with (see ensure()). */
  private readonly fingerprints = new Map<string, string>();
  /** ensure()/remove() calls are serialised per service id. */
  private readonly pending = new Map<string, Promise<void>>();
  private readonly changeCbs = new Set<(info: ServiceInfoData) => void>();
  private readonly events?: EventBus;
  private readonly cgroups: CgroupManager;
  private readonly waitDescribeIntervalMs: number;
  private readonly logLine: (line: string) => void;
  private terminating = false;

  constructor(opts: SupervisorOptions = {}) {
    this.logs = opts.logs ?? new LogManager(null);
    this.events = opts.events;
    this.waitDescribeIntervalMs = opts.waitDescribeIntervalMs ?? 1000;
    this.logLine = opts.log ?? ((line) => this.logs.get("machined").write(`${line}\n`));
    this.cgroups = opts.cgroups ?? new Cgroups({ log: (m) => this.logLine(m) });
  }

  /** Register services; already registered ids are kept as they are. Returns the ids. */
  load(...services: Service[]): string[] {
    if (this.terminating) return [];
    for (const s of services) {
      if (this.runners.has(s.id)) continue;
      this.runners.set(
        s.id,
        new ServiceRunner(s, {
          logs: this.logs,
          cgroups: this.cgroups,
          serviceUp: (dep) => this.upCondition(dep),
          waitDescribeIntervalMs: this.waitDescribeIntervalMs,
          recorded: (r, state, msg, health) => this.recorded(r, state, msg, health),
        }),
      );
    }
    return services.map((s) => s.id);
  }

  /** Stop and forget services (e.g. to re-load etcd with different settings). */
  async unload(...ids: string[]): Promise<void> {
    await this.stop(...ids.filter((id) => this.runners.has(id)));
    for (const id of ids) this.runners.delete(id);
  }

  /**
   * Run `service` under its id, as a controller that follows a spec resource asks: not loaded yet → load and
   * start; loaded with the same fingerprint → nothing; loaded with another fingerprint → stop, replace the
   * definition, start again. Calls for one id are serialised, so a burst of spec changes ends in the last one.
   */
  ensure(service: Service, fingerprint: string): Promise<void> {
    return this.serial(service.id, async () => {
      if (this.terminating) return;
      const current = this.runners.get(service.id);
      // Same definition: leave it alone, whatever state it is in (an operator may have stopped it).
      if (current && this.fingerprints.get(service.id) === fingerprint) return;
      if (current) await this.unload(service.id);
      this.load(service);
      this.fingerprints.set(service.id, fingerprint);
      this.start(service.id);
    });
  }

  /** Stop and forget a service a controller no longer wants (its spec went away). */
  remove(id: string): Promise<void> {
    return this.serial(id, async () => {
      this.fingerprints.delete(id);
      if (this.runners.has(id)) await this.unload(id);
    });
  }

  private serial(id: string, fn: () => Promise<void>): Promise<void> {
    const next = (this.pending.get(id) ?? Promise.resolve()).then(fn, fn);
    const tracked = next.finally(() => {
      if (this.pending.get(id) === tracked) this.pending.delete(id);
    });
    this.pending.set(id, tracked);
    return next;
  }

  has(id: string): boolean {
    return this.runners.has(id);
  }

  service<T extends Service = Service>(id: string): T | undefined {
    return this.runners.get(id)?.service as T | undefined;
  }

  /** Start the lifecycle loops (no-op for services already running). Never waits for a service. */
  start(...ids: string[]): void {
    if (this.terminating) return;
    for (const id of ids) this.runner(id).start();
  }

  startAll(): void {
    this.start(...this.runners.keys());
  }

  /** Stop services and wait until each is down. */
  async stop(...ids: string[]): Promise<void> {
    const rs = ids.map((id) => this.runner(id));
    await Promise.all(rs.map((r) => r.stop()));
  }

  async restart(id: string): Promise<void> {
    await this.stop(id);
    this.start(id);
  }

  /** Stop everything; a service stops only after the services depending on it have stopped. */
  async shutdown(): Promise<void> {
    this.terminating = true;
    const done = new Map<string, Promise<void>>();
    const dependents = (id: string) => [...this.runners.values()].filter((r) => r.service.dependsOn?.().includes(id)).map((r) => r.id);
    const stopOne = (id: string): Promise<void> => {
      const existing = done.get(id);
      if (existing) return existing;
      const r = this.runners.get(id) as ServiceRunner;
      // Registered before recursing, so a dependency cycle waits on the timeout instead of looping.
      const p = Promise.resolve()
        .then(() => {
          const ac = new AbortController();
          return Promise.race([
            Promise.all(dependents(id).map(stopOne)),
            sleep(REVERSE_DEP_WAIT_MS, ac.signal),
          ]).finally(() => ac.abort());
        })
        .then(() => r.stop());
      done.set(id, p);
      return p;
    };
    await Promise.all([...this.runners.keys()].map(stopOne));
  }

  /** ServiceStart RPC semantics (upstream APIStart). */
  async apiStart(id: string): Promise<void> {
    const r = this.runner(id);
    if (r.isRunning()) return;
    if (!r.service.api?.start) throw new ApiError(Code.Unknown, `service ${JSON.stringify(id)} doesn't support start operation via API`);
    this.start(id);
  }

  async apiStop(id: string): Promise<void> {
    const r = this.runner(id);
    if (!r.isRunning()) return;
    if (!r.service.api?.stop) throw new ApiError(Code.Unknown, `service ${JSON.stringify(id)} doesn't support stop operation via API`);
    await this.stop(id);
  }

  async apiRestart(id: string): Promise<void> {
    const r = this.runner(id);
    if (!r.isRunning()) return this.apiStart(id);
    if (!r.service.api?.restart) throw new ApiError(Code.Unknown, `service ${JSON.stringify(id)} doesn't support restart operation via API`);
    await this.restart(id);
  }

  /** All services sorted by id, ready for machine.ServiceInfo (see toServiceInfo). */
  list(): ServiceInfoData[] {
    return [...this.runners.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((r) => r.info());
  }

  info(id: string): ServiceInfoData | undefined {
    return this.runners.get(id)?.info();
  }

  state(id: string): ServiceState | undefined {
    return this.runners.get(id)?.getState();
  }

  isRunning(id: string): boolean {
    return this.runner(id).isRunning();
  }

  /** Called with the service's info after every recorded event (state change or health flip). */
  onChange(cb: (info: ServiceInfoData) => void): () => void {
    this.changeCbs.add(cb);
    return () => this.changeCbs.delete(cb);
  }

  /** Wait until a service is up / down / finished. */
  async waitFor(id: string, what: ServiceCondition, signal?: AbortSignal): Promise<void> {
    const r = this.runner(id);
    const pred =
      what === "up" ? () => r.isUp() : what === "down" ? () => r.isDown() : () => r.getState() === ServiceState.Finished;
    await r.waitUntil(pred, signal);
  }

  /** Record a transition on a service from outside (upstream: UpdateState, e.g. "Bootstrap requested"). */
  record(id: string, state: ServiceState, msg: string): void {
    this.runner(id).update(state, msg);
  }

  logsOf(id: string, opts?: LogReadOptions): AsyncIterable<Buffer> {
    return this.logs.read(id, opts);
  }

  private runner(id: string): ServiceRunner {
    const r = this.runners.get(id);
    if (!r) throw new ApiError(Code.Unknown, `service ${JSON.stringify(id)} not defined`);
    return r;
  }

  private upCondition(dep: string): Condition {
    let registered = this.runners.has(dep);
    return {
      describe: () => (registered ? `service ${JSON.stringify(dep)} to be "up"` : `service ${JSON.stringify(dep)} to be registered`),
      wait: async (signal) => {
        while (!this.runners.has(dep)) {
          if (!(await sleep(100, signal))) throw signal.reason;
        }
        registered = true;
        const r = this.runners.get(dep) as ServiceRunner;
        await r.waitUntil(() => r.isUp(), signal);
      },
    };
  }

  private recorded(r: ServiceRunner, state: ServiceState, msg: string, health: HealthStatus): void {
    this.logLine(`service[${r.id}](${stateName(state)}): ${msg}`);
    this.events?.publish(ServiceStateEventSchema, toServiceStateEvent(r.id, state, msg, health));
    const info = r.info();
    for (const cb of this.changeCbs) {
      try {
        cb(info);
      } catch {
        // A broken subscriber must not break the service loop.
      }
    }
  }
}
