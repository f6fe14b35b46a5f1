/**
 * One path for fatal agent errors, uncaught exceptions and unhandled rejections.
 *
 * As PID 1, exiting panics the kernel (and without panic= on the command line the node then hangs silently), so
 * a fatal error instead logs, runs the cleanup hook, and reboots after a delay (default 10 s: time to read the
 * console, and no tight reboot loop). The reboot timer is armed before cleanup starts and does not wait for it,
 * so a hung cleanup cannot keep the node up. In local mode: log, bounded cleanup, exit(1).
 */
import { writeSync } from "node:fs";
import type { Syscalls } from "../host/syscalls.js";
import { boundedSync, within } from "./power.js";

export interface FatalOptions {
  sys: Pick<Syscalls, "getpid" | "sync" | "syncAsync" | "reboot">;
  /** PID 1: time from the error to reboot(2) */
  rebootDelayMs?: number;
  /** local mode: how long cleanup may run before exit(1) */
  cleanupTimeoutMs?: number;
  syncTimeoutMs?: number;
  /** stop services, flush logs; may hang or throw */
  cleanup?: () => Promise<void>;
  /** default: synchronous write to stderr, so the message is out even if the process dies next */
  log?: (line: string) => void;
  exit?: (code: number) => void;
}

export interface FatalHandler {
  /** starts the fatal sequence once; later calls only log */
  fatal(err: unknown, context?: string): void;
  /** hooks uncaughtException, unhandledRejection and (as PID 1) exit; returns the uninstaller */
  install(): () => void;
  readonly triggered: boolean;
}

const describe = (err: unknown) => (err instanceof Error ? (err.stack ?? err.message) : String(err));
const stderrLog = (line: string) => {
  try {
    writeSync(2, `${line}\n`);
  } catch {
    // stderr gone (EAGAIN/EPIPE): nothing else to report to
  }
};

export function createFatalHandler(opts: FatalOptions): FatalHandler {
  const log = opts.log ?? stderrLog;
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const isPid1 = () => opts.sys.getpid() === 1;
  let triggered = false;

  const rebootNow = async () => {
    if (!(await boundedSync(opts.sys, opts.syncTimeoutMs ?? 5_000))) log("fatal: sync timed out, rebooting anyway");
    try {
      opts.sys.reboot("restart");
    } catch (err) {
      // Last resort: exiting PID 1 panics the kernel, which at least is not a silent hang.
      log(`fatal: reboot(2) failed: ${describe(err)}; exiting`);
      exit(1);
    }
  };

  const fatal = (err: unknown, context = "fatal error") => {
    if (triggered) {
      log(`fatal: another error while handling the first (${context}): ${describe(err)}`);
      return;
    }
    triggered = true;
    const pid1 = isPid1();
    const delay = pid1 ? (opts.rebootDelayMs ?? 10_000) : (opts.cleanupTimeoutMs ?? 5_000);
    log(`fatal: ${context}: ${describe(err)}`);
    log(pid1 ? `fatal: rebooting in ${delay / 1000} s` : "fatal: local mode, exiting with code 1");
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      if (pid1) void rebootNow();
      else exit(1);
    };
    // Armed first and kept referenced: fires even if cleanup never settles, and keeps the loop alive meanwhile.
    setTimeout(finish, delay);
    if (pid1) void opts.sys.syncAsync().catch(() => {}); // persist what we have now, the delay may be cut short
    const cleanup = opts.cleanup;
    if (!cleanup) {
      if (!pid1) finish();
      return;
    }
    void within(Promise.resolve().then(cleanup), delay).then((r) => {
      if (r.timedOut) log("fatal: cleanup did not finish in time");
      else if (r.error) log(`fatal: cleanup failed: ${describe(r.error)}`);
      if (!pid1) finish(); // local mode exits as soon as cleanup is done; PID 1 keeps the full delay
    });
  };

  const install = () => {
    const onException = (err: unknown, origin?: string) => fatal(err, origin ?? "uncaughtException");
    const onRejection = (reason: unknown) => fatal(reason, "unhandledRejection");
    // Something called process.exit() as PID 1: only synchronous work is possible here; reboot beats a panic.
    const onExit = (code: number) => {
      if (!isPid1()) return;
      log(`fatal: PID 1 exiting with code ${code}; rebooting instead`);
      opts.sys.sync();
      try {
        opts.sys.reboot("restart");
      } catch (err) {
        log(`fatal: reboot(2) failed on exit: ${describe(err)}`);
      }
    };
    process.on("uncaughtException", onException);
    process.on("unhandledRejection", onRejection);
    process.on("exit", onExit);
    return () => {
      process.off("uncaughtException", onException);
      process.off("unhandledRejection", onRejection);
      process.off("exit", onExit);
    };
  };

  return {
    fatal,
    install,
    get triggered() {
      return triggered;
    },
  };
}
