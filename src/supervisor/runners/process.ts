/**
 * Runs a host binary as the service workload. The process leads its own process group; a stop signals
 * the group (SIGTERM, then SIGKILL after the grace period) and leftovers of a crashed run are killed too,
 * so a restart never finds an orphan still holding ports or files.
 */
import { formatExit, reapGroup, realSpawner, stopProcessGroup, type ProcessSpawner } from "../../host/process.js";
import { ServiceState, type RunContext, type Runner } from "../types.js";

export interface ProcessRunnerOptions {
  args: string[];
  env?: Record<string, string>;
  cwd?: string;
  uid?: number;
  gid?: number;
  /** SIGTERM → SIGKILL grace period; upstream default 10 s. */
  gracefulStopMs?: number;
  spawner?: ProcessSpawner;
}

/** Go's %q of a string slice: ["a" "b"]. */
export function quoteArgs(args: string[]): string {
  return `[${args.map((a) => JSON.stringify(a)).join(" ")}]`;
}

export class ProcessRunner implements Runner {
  private readonly spawner: ProcessSpawner;

  constructor(private readonly opts: ProcessRunnerOptions) {
    this.spawner = opts.spawner ?? realSpawner;
  }

  toString(): string {
    return `Process(${quoteArgs(this.opts.args)})`;
  }

  async run(ctx: RunContext): Promise<void> {
    if (ctx.signal.aborted) return;
    let h;
    try {
      h = await this.spawner.spawn({
        args: this.opts.args,
        env: this.opts.env,
        cwd: this.opts.cwd,
        uid: this.opts.uid,
        gid: this.opts.gid,
        onOutput: (c) => ctx.log.write(c),
      });
    } catch (e) {
      throw new Error(`error starting process: ${(e as Error).message}`);
    }
    ctx.cgroup?.addProcess(h.pid);
    ctx.event(ServiceState.Running, `Process ${this} started with PID ${h.pid}`);

    let onAbort = () => {};
    const stopRequested = new Promise<"stop">((resolve) => {
      onAbort = () => resolve("stop");
      if (ctx.signal.aborted) resolve("stop");
      else ctx.signal.addEventListener("abort", onAbort, { once: true });
    });
    // Restarts reuse the same signal, so the listener must not outlive this run.
    const first = await Promise.race([h.exited, stopRequested]).finally(() => ctx.signal.removeEventListener("abort", onAbort));
    if (first === "stop") {
      await stopProcessGroup(h, {
        timeoutMs: this.opts.gracefulStopMs ?? 10_000,
        onTerm: () => ctx.event(ServiceState.Stopping, `Sending SIGTERM to ${this}`),
        onKill: () => ctx.event(ServiceState.Stopping, `Sending SIGKILL to ${this}`),
      });
      return;
    }
    await reapGroup(h.pgid);
    if (first.code === 0 && !first.signal) return;
    throw new Error(`${formatExit(first)} (last log ${JSON.stringify(ctx.log.lastLine())})`);
  }
}
