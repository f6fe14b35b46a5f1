/**
 * One service's lifecycle loop (upstream ServiceRunner + restart runner): Starting → Waiting for
 * dependencies/conditions → Preparing (pre step, runner creation) → Running with restarts and health
 * checks → Finished / Failed / Skipped. Each service has its own loop, so a stuck or crashing service never
 * blocks another one.
 */
import type { CgroupManager } from "../host/cgroups.js";
import { abortReason, allOf } from "./conditions.js";
import { HealthState, healthLoop, sleep } from "./health.js";
import { EventHistory } from "./history.js";
import type { LogManager, ServiceLog } from "./logs.js";
import {
  ServiceState,
  defaultHealth,
  defaultRestart,
  stateName,
  type Condition,
  type EventSink,
  type HealthStatus,
  type RunContext,
  type Runner,
  type Service,
  type ServiceInfoData,
  type StepContext,
} from "./types.js";

export interface RunnerHost {
  logs: LogManager;
  cgroups: CgroupManager;
  /** Condition "service <dep> is up", provided by the supervisor which knows all services. */
  serviceUp(dep: string): Condition;
  /** How often a Waiting description is re-checked (upstream: 1 s). */
  waitDescribeIntervalMs: number;
  /** Every recorded event: the supervisor publishes it and notifies change callbacks. */
  recorded(r: ServiceRunner, state: ServiceState, msg: string, health: HealthStatus): void;
}

type Outcome = "finished" | "skipped";

/** Go-like duration text for messages ("500ms", "1.5s", "1m0s"). */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${+(ms / 1000).toFixed(3)}s`;
  return `${Math.floor(ms / 60_000)}m${+((ms % 60_000) / 1000).toFixed(3)}s`;
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

const UNKNOWN_HEALTH: HealthStatus = { unknown: true, healthy: false, lastMessage: "", lastChange: new Date(0) };

export class ServiceRunner {
  readonly id: string;
  readonly log: ServiceLog;
  private state = ServiceState.Initialized;
  private readonly history = new EventHistory();
  private readonly health = new HealthState();
  private loop: Promise<void> | null = null;
  private ac: AbortController | null = null;
  private readonly listeners = new Set<() => void>();
  private readonly healthChecked: boolean;
  private healthFlipSuppressed = false;

  constructor(
    readonly service: Service,
    private readonly host: RunnerHost,
  ) {
    this.id = service.id;
    this.log = host.logs.get(this.id);
    this.healthChecked = !!service.health?.();
  }

  getState(): ServiceState {
    return this.state;
  }

  /** True while the lifecycle loop runs (any state between Starting and the final one). */
  isRunning(): boolean {
    return this.loop !== null;
  }

  /** Upstream "up": Skipped, or Running and (no health check or healthy). */
  isUp(): boolean {
    if (this.state === ServiceState.Skipped) return true;
    if (this.state !== ServiceState.Running) return false;
    return !this.healthChecked || this.health.isHealthy();
  }

  /** Upstream "down": a terminal state (also true before the first start). */
  isDown(): boolean {
    return (
      this.loop === null ||
      this.state === ServiceState.Failed ||
      this.state === ServiceState.Finished ||
      this.state === ServiceState.Skipped
    );
  }

  info(): ServiceInfoData {
    return { id: this.id, state: stateName(this.state), events: this.history.list(), health: this.health.get() };
  }

  /** Resolves once pred() holds (checked on every transition); rejects when the signal aborts. */
  waitUntil(pred: () => boolean, signal?: AbortSignal): Promise<void> {
    if (pred()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!pred()) return;
        cleanup();
        resolve();
      };
      const onAbort = () => {
        cleanup();
        reject(abortReason(signal as AbortSignal));
      };
      const cleanup = () => {
        this.listeners.delete(check);
        signal?.removeEventListener("abort", onAbort);
      };
      this.listeners.add(check);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Start the loop unless it already runs. The Starting event is recorded synchronously. */
  start(): void {
    if (this.loop) return;
    const ac = new AbortController();
    this.ac = ac;
    this.loop = this.main(ac.signal).finally(() => {
      this.loop = null;
      this.ac = null;
      this.notify();
    });
  }

  /** Ask the loop to stop (the runner stops its workload gracefully) and wait until it ended. */
  async stop(): Promise<void> {
    const loop = this.loop;
    if (!loop) return;
    this.ac?.abort(new Error("service stopped"));
    await loop;
  }

  /** Record a transition: history, publication, waiters. */
  update(state: ServiceState, msg: string): void {
    this.state = state;
    this.history.push(state, msg);
    this.host.recorded(this, state, msg, state === ServiceState.Running ? this.health.get() : UNKNOWN_HEALTH);
    this.notify();
  }

  private notify(): void {
    for (const l of [...this.listeners]) l();
  }

  private async main(signal: AbortSignal): Promise<void> {
    let outcome: Outcome;
    try {
      outcome = await this.run(signal);
    } catch (e) {
      if (signal.aborted) this.update(ServiceState.Finished, "Service stopped");
      else {
        const m = message(e);
        this.update(ServiceState.Failed, m.charAt(0).toUpperCase() + m.slice(1));
      }
      return;
    }
    if (outcome === "skipped") this.update(ServiceState.Skipped, "Service skipped");
    else if (signal.aborted) this.update(ServiceState.Finished, "Service stopped");
    else this.update(ServiceState.Finished, "Service finished successfully");
  }

  private async run(signal: AbortSignal): Promise<Outcome> {
    this.update(ServiceState.Starting, "Starting service");
    const ctx: StepContext = { id: this.id, signal, event: (s, m) => this.update(s, m), log: this.log };

    const conds = [...(this.service.dependsOn?.() ?? []).map((d) => this.host.serviceUp(d)), ...(this.service.conditions?.() ?? [])];
    if (conds.length > 0) await this.waitFor(allOf(conds), signal);

    this.update(ServiceState.Preparing, "Running pre state");
    try {
      await this.service.pre?.(ctx);
    } catch (e) {
      if (signal.aborted) throw e;
      throw new Error(`failed to run pre stage: ${message(e)}`);
    }
    if (signal.aborted) throw abortReason(signal);

    this.update(ServiceState.Preparing, "Creating service runner");
    let runner: Runner | null;
    try {
      runner = await this.service.runner(ctx);
    } catch (e) {
      throw new Error(`failed to create runner: ${message(e)}`);
    }
    try {
      if (!runner) return "skipped";
      await this.runWithRestarts(runner, signal);
      return "finished";
    } finally {
      try {
        await this.service.post?.(ctx, this.state);
      } catch (e) {
        this.update(ServiceState.Failed, `Failed to run post stage: ${message(e)}`);
      }
    }
  }

  private async waitFor(cond: Condition, signal: AbortSignal): Promise<void> {
    let desc = cond.describe();
    this.update(ServiceState.Waiting, `Waiting for ${desc}`);
    // Re-describe periodically: satisfied parts drop out of the message as they complete.
    const timer = setInterval(() => {
      const d = cond.describe();
      if (d && d !== desc) {
        desc = d;
        this.update(ServiceState.Waiting, `Waiting for ${d}`);
      }
    }, this.host.waitDescribeIntervalMs);
    try {
      await cond.wait(signal);
    } catch (e) {
      if (signal.aborted) throw e;
      throw new Error(`condition failed: ${message(e)}`);
    } finally {
      clearInterval(timer);
    }
  }

  private async runWithRestarts(runner: Runner, signal: AbortSignal): Promise<void> {
    const rs = { ...defaultRestart, ...this.service.restart?.() };
    const hc = this.service.health?.();
    const cgroup = this.host.cgroups.create(this.id, { memoryMaxBytes: this.service.memoryMaxBytes?.() });

    // The health loop spans restarts, like upstream; it ends with the runner.
    const healthAc = new AbortController();
    let healthDone: Promise<void> = Promise.resolve();
    if (hc) {
      this.health.init();
      healthDone = healthLoop(hc.check, { ...defaultHealth, ...hc.settings }, healthAc.signal, (ok, m) => this.healthResult(ok, m));
    }
    const sink: EventSink = (s, m) => {
      this.update(s, m);
      if (!hc) return;
      if (s !== ServiceState.Running) {
        this.health.update(false, "service not running");
        this.healthFlipSuppressed = false;
      } else if (this.healthFlipSuppressed) this.healthResult(this.health.isHealthy(), this.health.get().lastMessage, true);
    };
    const ctx: RunContext = { id: this.id, signal, event: sink, log: this.log, cgroup };

    let delay = rs.initialDelayMs;
    try {
      for (;;) {
        const started = Date.now();
        let err: unknown = null;
        try {
          await runner.run(ctx);
        } catch (e) {
          err = e;
        }
        if (signal.aborted) return;
        if (rs.policy === "once") {
          if (err) throw new Error(`failed running service: ${message(err)}`);
          return;
        }
        if (rs.policy === "untilSuccess" && !err) return;

        // Capped exponential backoff; a run that stayed up long enough counts as healthy again.
        if (Date.now() - started >= rs.resetAfterMs) delay = rs.initialDelayMs;
        const wait = delay;
        delay = Math.min(delay * 2, rs.maxDelayMs);
        const retry = `retrying in ${formatDuration(wait)}`;
        if (rs.policy === "untilSuccess") sink(ServiceState.Waiting, `Error running ${runner}, going to restart until it succeeds: ${message(err)}, ${retry}`);
        else if (err) sink(ServiceState.Waiting, `Error running ${runner}, going to restart forever: ${message(err)}, ${retry}`);
        else sink(ServiceState.Waiting, `Runner ${runner} exited without error, going to restart it, ${retry}`);

        if (!(await sleep(wait, signal))) {
          sink(ServiceState.Stopping, "Aborting restart sequence");
          return;
        }
      }
    } finally {
      healthAc.abort();
      await healthDone;
      await cgroup?.remove();
    }
  }

  private healthResult(ok: boolean, msg: string, replay = false): void {
    const changed = this.health.update(ok, msg) || replay;
    if (!changed) return;
    // Health flips only become events while Running (upstream suppresses them otherwise); a flip seen
    // while the runner was still starting is reported once it reports Running.
    this.healthFlipSuppressed = this.state !== ServiceState.Running;
    if (this.healthFlipSuppressed) return;
    const text = ok ? "Health check successful" : `Health check failed: ${msg}`;
    this.history.push(this.state, text);
    this.host.recorded(this, this.state, text, this.health.get());
    this.notify();
  }
}
