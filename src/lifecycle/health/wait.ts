/**
 * Sequential polling of cluster checks, as `talosctl health` reports them: each check is retried every
 * interval (its own, as upstream's PollingCondition, unless the caller forces one) until it passes or skips,
 * and each attempt may take at most that interval; progress lines read `waiting for <check>: <state>` where
 * the state is `...` (first attempt pending), `OK`, `SKIP`, or the last error. The reporter drops a line
 * equal to the previous one. The whole run shares one deadline.
 */
import { ApiError, Code } from "../../machinery/errors.js";

/** Thrown (or returned as `{ skip }`) by a check that does not apply to this cluster. */
export class SkipCheck extends Error {
  constructor(readonly reason = "") {
    super(reason ? `SKIP (${reason})` : "SKIP");
  }
}

export interface ClusterCheck {
  name: string;
  /** Poll interval and per-attempt time limit (default 5 s). */
  intervalMs?: number;
  /** Resolves when the condition holds; throws the reason it does not (or SkipCheck). The signal ends the attempt. */
  run(signal: AbortSignal): Promise<void>;
}

export interface WaitOptions {
  /** Absolute deadline in `now()` milliseconds. */
  deadline: number;
  /** Forces one poll interval on every check (tests); default: each check's own. */
  intervalMs?: number;
  now?: () => number;
  /** Waits `ms` or until the signal aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  signal?: AbortSignal;
}

export type Report = (line: string) => Promise<void> | void;

export const defaultSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });

/** A reporter that sends only lines that differ from the last one sent. */
export function dedupReporter(send: (line: string) => Promise<void> | void): Report {
  let last: string | undefined;
  return async (line) => {
    const l = line.trim();
    if (l === last) return;
    last = l;
    await send(l);
  };
}

export async function waitChecks(checks: ClusterCheck[], report: Report, opts: WaitOptions): Promise<void> {
  const now = opts.now ?? Date.now;
  const sleep = opts.sleep ?? defaultSleep;
  const signal = opts.signal ?? new AbortController().signal;
  const cancelled = () => new ApiError(Code.Canceled, "health check cancelled");
  for (const check of checks) {
    if (signal.aborted) throw cancelled();
    if (now() >= opts.deadline) throw deadline(check.name, undefined);
    const interval = opts.intervalMs ?? check.intervalMs ?? 5_000;
    const line = (state: string) => report(`waiting for ${check.name}: ${state}`);
    await line("...");
    let lastErr: string | undefined;
    for (;;) {
      const started = now();
      const left = opts.deadline - started;
      if (left <= 0) throw deadline(check.name, lastErr);
      try {
        await attempt(check, signal, Math.min(left, interval));
        await line("OK");
        break;
      } catch (err) {
        if (err instanceof SkipCheck) {
          await line(err.message);
          break;
        }
        lastErr = err instanceof Error ? err.message : String(err);
      }
      await line(lastErr);
      if (signal.aborted) throw cancelled();
      const remaining = opts.deadline - now();
      if (remaining <= 0) throw deadline(check.name, lastErr);
      // Attempts start every interval (a ticker upstream), however long the last one took.
      await sleep(Math.min(Math.max(0, interval - (now() - started)), remaining), signal);
    }
  }
}

function deadline(name: string, lastErr: string | undefined): ApiError {
  return new ApiError(Code.DeadlineExceeded, `context deadline exceeded: waiting for ${name}${lastErr ? `: ${lastErr}` : ""}`);
}

/** How long an attempt whose time is up may take to report its own failure (a read naming its node). */
const DEADLINE_GRACE_MS = 100;

/**
 * One attempt, cancelled (its signal aborted with "context deadline exceeded") when it outlives `ms`. As a Go
 * assertion whose context expires returns its own wrapped error (`error getting version from node "X": ...
 * context deadline exceeded`), an attempt that fails within a short grace after the abort fails with its own
 * error when that says so; otherwise the attempt fails with "context deadline exceeded".
 */
async function attempt(check: ClusterCheck, outer: AbortSignal, ms: number): Promise<void> {
  if (ms <= 0) throw new Error("context deadline exceeded");
  const ac = new AbortController();
  const onAbort = () => ac.abort(outer.reason);
  outer.addEventListener("abort", onAbort, { once: true });
  const timers: NodeJS.Timeout[] = [];
  const after = (delay: number) => new Promise<void>((resolve) => timers.push(setTimeout(resolve, delay)));
  const run = check.run(ac.signal);
  // Settled or not, its rejection is handled here (a late one must not go unhandled).
  const outcome = run.then(
    () => ({ ok: true as const }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  try {
    const first = await Promise.race([outcome, after(ms).then(() => undefined)]);
    if (first) {
      if (!first.ok) throw first.error;
      return;
    }
    const deadline = new Error("context deadline exceeded");
    ac.abort(deadline);
    const late = await Promise.race([outcome, after(DEADLINE_GRACE_MS).then(() => undefined)]);
    // Only a failure that says it is the deadline's (another one is the abort's side effect, not the reason).
    if (late && !late.ok && /deadline exceeded/i.test(late.error instanceof Error ? late.error.message : String(late.error))) throw late.error;
    throw deadline;
  } finally {
    for (const t of timers) clearTimeout(t);
    outer.removeEventListener("abort", onAbort);
  }
}
