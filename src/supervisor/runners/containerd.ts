/**
 * Runs an image as a containerd task through `ctr run` in the foreground: ctr's stdout/stderr are the
 * container's, so they land in the service log, and ctr's exit status is the task's.
 *
 * ctr quirks handled here (services-feasibility.md §3): arguments after the container id replace the
 * whole entrypoint+cmd, so `args` must start with the executable; PID 1 without a TERM handler ignores
 * SIGTERM, so a stop escalates to SIGKILL for all processes; a previous task/container with the same id
 * blocks a new run, so it is removed first.
 */
import { reapGroup, realSpawner, stopProcessGroup, type ProcessSpawner } from "../../host/process.js";
import { Ctr } from "../ctr.js";
import { ServiceState, type RunContext, type Runner } from "../types.js";

export interface Mount {
  type?: string;
  src: string;
  dst: string;
  /** e.g. ["rbind", "ro"]. */
  options?: string[];
}

export interface ContainerdRunnerOptions {
  address: string;
  namespace: string;
  containerId: string;
  image: string;
  /** Replaces entrypoint+cmd; the first element is the executable inside the image. */
  args?: string[];
  env?: Record<string, string>;
  mounts?: Mount[];
  labels?: Record<string, string>;
  netHost?: boolean;
  privileged?: boolean;
  memoryLimitBytes?: number;
  snapshotter?: string;
  cwd?: string;
  /** Join existing namespaces, e.g. ["pid:/proc/1/ns/pid"] for the host PID namespace. */
  withNs?: string[];
  /** The task's cgroup (every v1 hierarchy): under the node's own folder, so a restart can reap what a crash left. */
  cgroup?: string;
  /** Propagation of the container's rootfs ("shared" for a kubelet that mounts volumes). */
  rootfsPropagation?: string;
  gracefulStopMs?: number;
  ctrBin?: string;
  spawner?: ProcessSpawner;
}

/** Label naming the file a container's output is kept in (read back by containerLogs). */
export const LOG_LABEL = "io.machined.log";

export class ContainerdRunner implements Runner {
  readonly ctr: Ctr;

  constructor(private readonly o: ContainerdRunnerOptions) {
    this.ctr = new Ctr(o.address, o.ctrBin);
  }

  toString(): string {
    return `Containerd(${JSON.stringify(this.o.containerId)})`;
  }

  /** The `ctr run` argv (exposed for tests and debugging). */
  runArgs(logPath?: string): string[] {
    const o = this.o;
    const a = [o.ctrBin ?? "ctr", "-a", o.address, "-n", o.namespace, "run", "--rm"];
    if (o.netHost) a.push("--net-host");
    if (o.privileged) a.push("--privileged");
    if (o.snapshotter) a.push("--snapshotter", o.snapshotter);
    if (o.cwd) a.push("--cwd", o.cwd);
    if (o.memoryLimitBytes) a.push("--memory-limit", String(o.memoryLimitBytes));
    for (const ns of o.withNs ?? []) a.push("--with-ns", ns);
    if (o.rootfsPropagation) a.push("--rootfs-propagation", o.rootfsPropagation);
    if (o.cgroup) a.push("--cgroup", o.cgroup);
    for (const [k, v] of Object.entries(o.env ?? {})) a.push("--env", `${k}=${v}`);
    const labels = { ...o.labels, ...(logPath ? { [LOG_LABEL]: logPath } : {}) };
    for (const [k, v] of Object.entries(labels)) a.push("--label", `${k}=${v}`);
    for (const m of o.mounts ?? []) {
      a.push("--mount", `type=${m.type ?? "bind"},src=${m.src},dst=${m.dst},options=${(m.options ?? ["rbind", "rw"]).join(":")}`);
    }
    a.push(o.image, o.containerId, ...(o.args ?? []));
    return a;
  }

  async run(ctx: RunContext): Promise<void> {
    const { namespace: ns, containerId: id } = this.o;
    if (ctx.signal.aborted) return;
    await this.ctr.cleanup(ns, id);
    const spawner = this.o.spawner ?? realSpawner;
    let h;
    try {
      h = await spawner.spawn({ args: this.runArgs(ctx.log.filePath ?? undefined), onOutput: (c) => ctx.log.write(c) });
    } catch (e) {
      throw new Error(`failed to create task: ${JSON.stringify(id)}: ${(e as Error).message}`);
    }
    ctx.cgroup?.addProcess(h.pid);

    let onAbort = () => {};
    const stopRequested = new Promise<"stop">((resolve) => {
      onAbort = () => resolve("stop");
      if (ctx.signal.aborted) resolve("stop");
      else ctx.signal.addEventListener("abort", onAbort, { once: true });
    });
    try {
      const task = await this.waitForTask(h.exited, ctx.signal);
      if (task) ctx.event(ServiceState.Running, `Started task ${id} (PID ${task.pid}) for container ${id}`);
      const first = await Promise.race([h.exited, stopRequested]);
      if (first === "stop") {
        await this.stopTask(ctx, task?.pid ?? 0);
        await stopProcessGroup(h, { timeoutMs: 2000 });
        return;
      }
      await reapGroup(h.pgid);
      if (first.code === 0 && !first.signal) return;
      const code = first.code ?? 128;
      throw new Error(`task ${JSON.stringify(id)} failed: exit code ${code} (last log ${JSON.stringify(ctx.log.lastLine())})`);
    } finally {
      ctx.signal.removeEventListener("abort", onAbort);
      await this.ctr.cleanup(ns, id);
    }
  }

  /** Poll until the task shows up (or ctr exits first, e.g. the image is missing). */
  private async waitForTask(exited: Promise<unknown>, signal: AbortSignal): Promise<{ pid: number } | undefined> {
    let done = false;
    void exited.then(() => (done = true));
    for (let i = 0; i < 300 && !done && !signal.aborted; i++) {
      const t = await this.ctr.task(this.o.namespace, this.o.containerId).catch(() => undefined);
      if (t && t.pid > 0 && t.status === "RUNNING") return t;
      await new Promise((r) => setTimeout(r, 20));
    }
    return undefined;
  }

  private async stopTask(ctx: RunContext, pid: number): Promise<void> {
    const { namespace: ns, containerId: id } = this.o;
    const what = `task ${id} (PID ${pid}, container ${id})`;
    ctx.event(ServiceState.Stopping, `Sending SIGTERM to ${what}`);
    await this.ctr.kill(ns, id, "SIGTERM").catch(() => {});
    const end = Date.now() + (this.o.gracefulStopMs ?? 10_000);
    while (Date.now() < end) {
      const t = await this.ctr.task(ns, id).catch(() => undefined);
      if (!t || t.status === "STOPPED") return;
      await new Promise((r) => setTimeout(r, 50));
    }
    ctx.event(ServiceState.Stopping, `Sending SIGKILL to ${what}`);
    await this.ctr.kill(ns, id, "SIGKILL").catch(() => {});
  }
}
