/**
 * Power-off and reboot: stop services (hook from the caller), sync, then reboot(2) when PID 1.
 * In local mode reboot(2) would hit the developer's machine (and is refused anyway), so the result is simulated.
 * Every step is bounded by a timeout: a hung service or disk must not keep the node from going down.
 */
import type { Syscalls } from "../host/syscalls.js";

export type PowerAction = "poweroff" | "reboot";

export interface PowerOptions {
  sys: Pick<Syscalls, "getpid" | "syncAsync" | "reboot">;
  /** stops services and unmounts; errors and timeouts are logged, never block the power action */
  stopServices?: (action: PowerAction) => Promise<void>;
  stopTimeoutMs?: number;
  syncTimeoutMs?: number;
  log?: (msg: string) => void;
}

export interface PowerResult {
  action: PowerAction;
  /** true in local mode: everything but reboot(2) happened */
  simulated: boolean;
  stopError?: string;
  syncTimedOut: boolean;
}

/** Resolves "done" or "timeout"; a rejection counts as done with the error. */
export async function within<T>(p: Promise<T>, ms: number): Promise<{ timedOut: boolean; error?: unknown }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), ms)));
  try {
    const r = await Promise.race([p.then(() => "done" as const), timeout]);
    return { timedOut: r === "timeout" };
  } catch (error) {
    return { timedOut: false, error };
  } finally {
    clearTimeout(timer);
  }
}

/** sync(2) off the main thread, given up after `ms` (a dead disk can block sync for ever). */
export async function boundedSync(sys: Pick<Syscalls, "syncAsync">, ms: number): Promise<boolean> {
  const r = await within(sys.syncAsync(), ms);
  return !r.timedOut;
}

export interface Power {
  powerOff(): Promise<PowerResult>;
  reboot(): Promise<PowerResult>;
}

export function createPower(opts: PowerOptions): Power {
  const log = opts.log ?? (() => {});
  // The first request wins: a reboot asked for during a power-off (or twice) joins the one in progress.
  let inProgress: Promise<PowerResult> | undefined;

  const run = async (action: PowerAction): Promise<PowerResult> => {
    const result: PowerResult = { action, simulated: false, syncTimedOut: false };
    if (opts.stopServices) {
      const stopServices = opts.stopServices;
      // via then(): a hook that throws synchronously is handled like a rejected one
      const stop = await within(Promise.resolve().then(() => stopServices(action)), opts.stopTimeoutMs ?? 60_000);
      if (stop.timedOut) result.stopError = "stopping services timed out";
      else if (stop.error) result.stopError = String((stop.error as Error)?.message ?? stop.error);
      if (result.stopError) log(`${action}: ${result.stopError}; continuing`);
    }
    result.syncTimedOut = !(await boundedSync(opts.sys, opts.syncTimeoutMs ?? 10_000));
    if (result.syncTimedOut) log(`${action}: sync timed out; continuing`);
    if (opts.sys.getpid() !== 1) {
      log(`${action}: not PID 1, reboot(2) skipped (local mode)`);
      return { ...result, simulated: true };
    }
    log(`${action}: calling reboot(2)`);
    opts.sys.reboot(action === "reboot" ? "restart" : "poweroff"); // does not return on success
    return result;
  };

  const request = (action: PowerAction) => (inProgress ??= run(action));
  return { powerOff: () => request("poweroff"), reboot: () => request("reboot") };
}
