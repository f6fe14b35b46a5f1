/**
 * Zombie reaper for Node as PID 1 (or as a child subreaper), the "targeted" design proven in
 * node-feasibility.md §5.
 *
 * libuv only waitpid()s the pids it spawned, so orphans re-parented to us stay zombies for ever. A blind
 * waitpid(-1) would steal libuv's children too: their 'exit' events are lost and exec()/execa() hang. So:
 * 1. every ChildProcess goes through ChildProcess.prototype.spawn (spawn, exec, execFile, fork, execa); we wrap
 *    it and remember the pid until 'exit'. spawn is synchronous, so the pid is known before any SIGCHLD handler
 *    can run. spawnSync/execSync run their own loop while JS is blocked, so they cannot race with us.
 * 2. on SIGCHLD (coalesced with setImmediate, after libuv's own reaping) and on a safety interval, list our
 *    children from /proc/self/task/* /children and waitpid(pid, WNOHANG) only zombies we do not track.
 *
 * Limitation: children spawned from worker threads or native code bypass the wrapper of this thread and could
 * be reaped here, losing their exit status. machined spawns only from the main thread.
 */
import { ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import type { Syscalls } from "../host/syscalls.js";

const tracked = new Set<number>();
let wrapped = false;

/** Wraps ChildProcess.prototype.spawn once per process; later calls are no-ops. */
export function trackChildProcesses(): void {
  if (wrapped) return;
  wrapped = true;
  const proto = ChildProcess.prototype as unknown as { spawn: (...args: unknown[]) => unknown };
  const original = proto.spawn;
  proto.spawn = function (this: ChildProcess, ...args: unknown[]) {
    const result = original.apply(this, args);
    const pid = this.pid;
    if (pid !== undefined) {
      tracked.add(pid);
      // 'exit' is emitted synchronously right after libuv has reaped the pid.
      this.once("exit", () => tracked.delete(pid));
    }
    return result;
  };
}

/** Pids spawned through ChildProcess that libuv has not reaped yet. */
export function trackedPids(): ReadonlySet<number> {
  return tracked;
}

const readOrNull = (path: string): string | null => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null; // the process (or thread) went away while we looked
  }
};

/** "pid (comm) S ppid ..." — comm may contain spaces and ')', so split after the last ')'. */
export function parseStat(stat: string): { state: string; ppid: number } | null {
  const close = stat.lastIndexOf(")");
  if (close < 0) return null;
  const rest = stat.slice(close + 2).split(" ");
  return { state: rest[0], ppid: Number(rest[1]) };
}

/** Our direct children: /proc/self/task/<tid>/children (orphans may be re-parented to any of our threads). */
export function listChildren(procRoot = "/proc", selfPid = process.pid): number[] {
  const pids = new Set<number>();
  let tasks: string[];
  try {
    tasks = readdirSync(`${procRoot}/self/task`);
  } catch {
    tasks = [];
  }
  let supported = false;
  for (const tid of tasks) {
    const text = readOrNull(`${procRoot}/self/task/${tid}/children`);
    if (text === null) continue;
    supported = true;
    for (const p of text.split(" ")) if (p.trim()) pids.add(Number(p));
  }
  if (supported) return [...pids];
  // Fallback without CONFIG_PROC_CHILDREN: scan every /proc/<pid>/stat for our pid as parent.
  for (const name of readdirSync(procRoot)) {
    if (!/^\d+$/.test(name)) continue;
    const st = parseStat(readOrNull(`${procRoot}/${name}/stat`) ?? "");
    if (st?.ppid === selfPid) pids.add(Number(name));
  }
  return [...pids];
}

export interface ReaperStats {
  scans: number;
  reaped: number;
  /** zombies seen that belong to libuv (tracked) and were left alone */
  skippedTracked: number;
  errors: number;
}

export interface ReaperOptions {
  sys: Pick<Syscalls, "waitpidNoHang" | "setChildSubreaper">;
  /** safety scan period; SIGCHLD can be coalesced by the kernel, so never rely on it alone */
  intervalMs?: number;
  /** become a child subreaper (useful when not PID 1, see startReaper) */
  subreaper?: boolean;
  procRoot?: string;
  tracked?: ReadonlySet<number>;
  onReap?: (pid: number, status: number) => void;
  onError?: (err: unknown) => void;
}

export interface Reaper {
  readonly stats: Readonly<ReaperStats>;
  /** one scan now; returns how many zombies it reaped */
  scan(): number;
  stop(): void;
}

/**
 * Starts reaping. As PID 1 orphans come to us anyway. In local mode `subreaper: true` makes orphaned
 * descendants (e.g. daemonized containerd shims) re-parent to machined instead of the host init, so they stay
 * visible for cleanup on shutdown; it is only safe together with this reaper, hence the option lives here.
 */
export function startReaper(opts: ReaperOptions): Reaper {
  trackChildProcesses();
  if (opts.subreaper) opts.sys.setChildSubreaper();
  const procRoot = opts.procRoot ?? "/proc";
  const skip = opts.tracked ?? tracked;
  const stats: ReaperStats = { scans: 0, reaped: 0, skippedTracked: 0, errors: 0 };

  const scan = (): number => {
    stats.scans++;
    let reaped = 0;
    for (const pid of listChildren(procRoot)) {
      const st = parseStat(readOrNull(`${procRoot}/${pid}/stat`) ?? "");
      if (st?.state !== "Z") continue;
      if (skip.has(pid)) {
        stats.skippedTracked++;
        continue;
      }
      try {
        const res = opts.sys.waitpidNoHang(pid);
        if (res) {
          reaped++;
          opts.onReap?.(res.pid, res.status);
        }
      } catch (err) {
        // ECHILD: someone else (libuv, spawnSync) reaped it between our read and the wait.
        if ((err as { code?: string }).code === "ECHILD") continue;
        stats.errors++;
        opts.onError?.(err);
      }
    }
    stats.reaped += reaped;
    return reaped;
  };

  let pending = false;
  const onSigchld = () => {
    if (pending) return;
    pending = true;
    // setImmediate: run after libuv's own SIGCHLD handling has reaped (and untracked) its children.
    setImmediate(() => {
      pending = false;
      scan();
    });
  };
  process.on("SIGCHLD", onSigchld);
  const timer = setInterval(scan, opts.intervalMs ?? 2000);
  timer.unref(); // the reaper alone must not keep a local-mode process alive
  return {
    stats,
    scan,
    stop() {
      process.off("SIGCHLD", onSigchld);
      clearInterval(timer);
    },
  };
}
