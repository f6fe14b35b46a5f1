/**
 * Drives one controller: watches its inputs, runs reconcile once at start and again after input
 * changes, and retries failures with capped exponential backoff.
 *
 * Coalescing: a run is scheduled with setImmediate, so a synchronous burst of writes (delivered to us
 * as a burst of events) becomes one run; events arriving while a run is in flight set a single
 * "pending" flag that causes exactly one more run. During backoff, changes wait for the retry, which
 * reads the latest state anyway.
 */
import type { Unsubscribe, WatchEvent, State } from "../types.js";
import type { Controller, ControllerStatus, Input, ReconcileResult, RuntimeLogger } from "./controller.js";
import { reconcileContext } from "./context.js";

/** The longest delay setTimeout takes as given. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  factor: number;
}

export class ControllerRunner {
  private runs = 0;
  private failures = 0;
  private lastError?: string;
  private lastErrorAt?: Date;
  private lastSuccessAt?: Date;
  private retryAt?: Date;

  private running = false;
  private pending = false;
  private scheduled?: NodeJS.Immediate;
  private retryTimer?: NodeJS.Timeout;
  private requeueTimer?: NodeJS.Timeout;
  private inFlight?: Promise<void>;
  private stopped = false;
  private readonly unsubs = new Map<Input, Unsubscribe>();
  private stopWakeups?: () => void;

  constructor(
    readonly controller: Controller,
    private readonly state: State,
    private readonly signal: AbortSignal,
    private readonly logger: RuntimeLogger,
    private readonly backoff: BackoffOptions,
  ) {}

  start(): void {
    for (const input of this.controller.inputs) this.subscribe(input);
    if (this.controller.wakeups) {
      try {
        this.stopWakeups = this.controller.wakeups(() => this.trigger());
      } catch (err) {
        // Without its event source the controller still runs on input changes; say why it may lag.
        this.logger(this.controller.name, "cannot subscribe to outside events", { error: String((err as Error).message ?? err) });
      }
    }
    this.trigger();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopWakeups?.();
    this.stopWakeups = undefined;
    for (const unsub of this.unsubs.values()) unsub();
    this.unsubs.clear();
    if (this.scheduled) clearImmediate(this.scheduled);
    clearTimeout(this.retryTimer);
    clearTimeout(this.requeueTimer);
    await this.inFlight;
  }

  status(): ControllerStatus {
    return {
      name: this.controller.name,
      runs: this.runs,
      running: this.running,
      consecutiveFailures: this.failures,
      lastError: this.lastError,
      lastErrorAt: this.lastErrorAt,
      lastSuccessAt: this.lastSuccessAt,
      retryAt: this.retryAt,
    };
  }

  /** Asks for a reconcile soon; cheap to call many times. */
  trigger(): void {
    if (this.stopped) return;
    if (this.running || this.retryTimer) {
      this.pending = true;
      return;
    }
    this.scheduled ??= setImmediate(() => {
      this.scheduled = undefined;
      this.inFlight = this.run();
    });
  }

  private subscribe(input: Input): void {
    // The initial run reads current state, so the single watch's first event (current state) is redundant.
    let skipFirst = input.id !== undefined;
    const onEvent = (e: WatchEvent) => {
      if (skipFirst) {
        skipFirst = false;
        return;
      }
      if (e.type === "errored") {
        // Our watch fell behind (overrun): start a fresh one and reconcile, which catches up on everything.
        this.unsubs.get(input)?.();
        if (!this.stopped) this.subscribe(input);
      }
      this.trigger();
    };
    const unsub =
      input.id !== undefined
        ? this.state.watch({ namespace: input.namespace, type: input.type, id: input.id }, onEvent)
        : this.state.watchKind(input.namespace, input.type, {}, onEvent);
    this.unsubs.set(input, unsub);
  }

  private async run(): Promise<void> {
    this.running = true;
    this.pending = false;
    let result: ReconcileResult;
    try {
      const ctx = reconcileContext(this.state, this.controller, this.signal, this.logger);
      result = await this.controller.reconcile(ctx);
    } catch (err) {
      this.running = false;
      this.runs++;
      this.fail(err);
      return;
    }
    this.running = false;
    this.runs++;
    this.failures = 0;
    this.retryAt = undefined;
    this.lastSuccessAt = new Date();
    // The latest successful run decides whether (and when) to look again.
    clearTimeout(this.requeueTimer);
    this.requeueTimer = undefined;
    const after = result?.requeueAfterMs;
    if (after !== undefined && after >= 0 && !this.stopped) {
      // Node fires a timer beyond 2^31-1 ms after 1 ms (a TimeoutOverflowWarning each time): an infinite DHCP lease
      // (renewal at half of 2^32 s) became a reconcile loop. Clamped, the run at that time simply asks again.
      this.requeueTimer = setTimeout(() => {
        this.requeueTimer = undefined;
        this.trigger();
      }, Math.min(after, MAX_TIMER_MS));
    }
    if (this.pending) this.trigger();
  }

  private fail(err: unknown): void {
    this.failures++;
    this.lastError = err instanceof Error ? err.message : String(err);
    this.lastErrorAt = new Date();
    if (this.stopped) return;
    const { initialMs, maxMs, factor } = this.backoff;
    const delay = Math.min(maxMs, initialMs * factor ** (this.failures - 1));
    this.retryAt = new Date(Date.now() + delay);
    this.logger(this.controller.name, "reconcile failed", {
      error: this.lastError,
      failures: this.failures,
      retryInMs: delay,
    });
    clearTimeout(this.requeueTimer);
    this.requeueTimer = undefined;
    this.pending = false;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.inFlight = this.run();
    }, delay);
  }
}
