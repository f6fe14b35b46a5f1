/**
 * The service contract of the supervisor, mirroring Talos's pkg/system: a service declares dependencies,
 * conditions, pre/post steps, a runner, a restart policy and optionally a health check; the supervisor
 * drives it through the upstream state machine.
 */
import type { ServiceLog } from "./logs.js";
import type { ServiceCgroup } from "../host/cgroups.js";

/** Numeric values equal machine.ServiceStateEvent.Action, so an event's action is just the state. */
export enum ServiceState {
  Initialized = 0,
  Preparing = 1,
  Waiting = 2,
  Running = 3,
  Stopping = 4,
  Finished = 5,
  Failed = 6,
  Skipped = 7,
  Starting = 8,
}

/** The state string of machine.ServiceInfo.state ("Running", ...). */
export function stateName(s: ServiceState): string {
  return ServiceState[s] ?? "Unknown";
}

/** Records a state transition with a message; runners and steps report progress through it. */
export type EventSink = (state: ServiceState, message: string) => void;

export interface StepContext {
  readonly id: string;
  /** Aborted when the service is asked to stop. */
  readonly signal: AbortSignal;
  readonly event: EventSink;
  readonly log: ServiceLog;
}

export interface RunContext extends StepContext {
  /** The service's own cgroup, or null where cgroups are unavailable. */
  readonly cgroup: ServiceCgroup | null;
}

export interface Runner {
  /** Shown in events, e.g. `Process(["/usr/bin/etcd" "--name" "n1"])`. */
  toString(): string;
  /**
   * Run the workload once. Resolves when it ended cleanly or was stopped because ctx.signal aborted
   * (the runner performs the graceful stop itself); rejects with the failure otherwise.
   */
  run(ctx: RunContext): Promise<void>;
}

/** Something a service waits for before it is prepared; describe() is shown while Waiting. */
export interface Condition {
  describe(): string;
  /** Resolves once satisfied; rejects (e.g. with the abort reason) when the signal aborts. */
  wait(signal: AbortSignal): Promise<void>;
}

export type RestartPolicy = "forever" | "once" | "untilSuccess";

export interface RestartSettings {
  policy: RestartPolicy;
  /** First delay before a restart; doubles after each failed run. */
  initialDelayMs: number;
  maxDelayMs: number;
  /** A run that stayed up at least this long resets the delay to initialDelayMs. */
  resetAfterMs: number;
}

export const defaultRestart: RestartSettings = {
  policy: "forever",
  initialDelayMs: 1000,
  maxDelayMs: 30_000,
  resetAfterMs: 60_000,
};

export interface HealthSettings {
  initialDelayMs: number;
  periodMs: number;
  /** A check still pending after this long counts as failed. */
  timeoutMs: number;
}

/** Upstream defaults (health/settings.go). */
export const defaultHealth: HealthSettings = { initialDelayMs: 1000, periodMs: 5000, timeoutMs: 500 };

/** Resolves when healthy, rejects with the reason otherwise; should honour the signal (timeout). */
export type HealthCheck = (signal: AbortSignal) => Promise<void>;

export interface Service {
  readonly id: string;
  /** Services that must be up (Running and healthy, or Skipped) before this one is prepared. */
  dependsOn?(): string[];
  conditions?(): Condition[];
  pre?(ctx: StepContext): Promise<void>;
  /** Runs after the runner finished, with the state at that moment. */
  post?(ctx: StepContext, state: ServiceState): Promise<void>;
  /** null means "nothing to run": the service ends as Skipped. */
  runner(ctx: StepContext): Runner | null | Promise<Runner | null>;
  restart?(): Partial<RestartSettings>;
  health?(): { check: HealthCheck; settings?: Partial<HealthSettings> } | undefined;
  /** memory.max of the service cgroup. */
  memoryMaxBytes?(): number | undefined;
  /** Runs inside machined (no daemon): listed even where daemons cannot run. */
  readonly inProcess?: boolean;
  /** Which operations the ServiceStart/Stop/Restart RPCs may perform (upstream default: none). */
  readonly api?: { start?: boolean; stop?: boolean; restart?: boolean };
}

export interface ServiceEventRecord {
  msg: string;
  state: string;
  ts: Date;
}

export interface HealthStatus {
  unknown: boolean;
  healthy: boolean;
  lastMessage: string;
  lastChange: Date;
}

/** Plain data for machine.ServiceInfo; see toServiceInfo() in proto.ts for the message. */
export interface ServiceInfoData {
  id: string;
  state: string;
  events: ServiceEventRecord[];
  health: HealthStatus;
}

/** What service controllers may do with the supervisor: run a service with a given definition, or stop and forget it. */
export interface ServiceHost {
  /** Load and start; same fingerprint → nothing; another fingerprint → stop and start the new definition. */
  ensure(service: Service, fingerprint: string): Promise<void>;
  remove(id: string): Promise<void>;
}
