/**
 * Health tracking: the status shown in ServiceInfo.health and the periodic check loop. A check that
 * hangs is abandoned after its timeout and counted as a failure, so it can never stall the service.
 */
import type { HealthCheck, HealthSettings, HealthStatus } from "./types.js";

export class HealthState {
  private healthy: boolean | null = null;
  private lastMessage = "";
  private lastChange = new Date(0);

  /** Back to unknown at the start of every run (upstream: state.Init). */
  init(): void {
    this.healthy = null;
    this.lastMessage = "Unknown";
    this.lastChange = new Date();
  }

  /** Returns true when healthy/unhealthy flipped (the only updates that produce events). */
  update(healthy: boolean, message: string): boolean {
    const changed = this.healthy !== healthy;
    if (changed) {
      this.healthy = healthy;
      this.lastChange = new Date();
    }
    this.lastMessage = message;
    return changed;
  }

  isHealthy(): boolean {
    return this.healthy === true;
  }

  get(): HealthStatus {
    return {
      unknown: this.healthy === null,
      healthy: this.healthy === true,
      lastMessage: this.lastMessage,
      lastChange: this.lastChange,
    };
  }
}

export class HealthTimeoutError extends Error {
  constructor() {
    // Upstream surfaces Go's context error text here.
    super("context deadline exceeded");
  }
}

/** One check bounded by timeoutMs, also when the check ignores its abort signal. */
export async function runCheck(check: HealthCheck, timeoutMs: number, outer: AbortSignal): Promise<void> {
  const ac = new AbortController();
  const onOuter = () => ac.abort(outer.reason);
  outer.addEventListener("abort", onOuter, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, rej) => {
    timer = setTimeout(() => {
      const err = new HealthTimeoutError();
      ac.abort(err);
      rej(err);
    }, timeoutMs);
  });
  try {
    await Promise.race([Promise.resolve().then(() => check(ac.signal)), timeout]);
  } finally {
    clearTimeout(timer);
    outer.removeEventListener("abort", onOuter);
  }
}

/** Periodic checks until the signal aborts; every result goes to onResult. */
export async function healthLoop(
  check: HealthCheck,
  settings: HealthSettings,
  signal: AbortSignal,
  onResult: (healthy: boolean, message: string) => void,
): Promise<void> {
  if (!(await sleep(settings.initialDelayMs, signal))) return;
  while (!signal.aborted) {
    const started = Date.now();
    try {
      await runCheck(check, settings.timeoutMs, signal);
      if (signal.aborted) return;
      onResult(true, "");
    } catch (e) {
      if (signal.aborted) return;
      onResult(false, e instanceof Error ? e.message : String(e));
    }
    const wait = Math.max(0, settings.periodMs - (Date.now() - started));
    if (!(await sleep(wait, signal))) return;
  }
}

/** Resolves true after ms, false as soon as the signal aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
