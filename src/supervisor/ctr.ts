/**
 * A thin client over Debian's `ctr` for our containerd socket: namespaces, container/task listing,
 * kill and cleanup. Text output is parsed by columns; ids and image names never contain spaces.
 */
import { hostTools, type ToolOptions, type Tools } from "../host/tools.js";

export interface ContainerSummary {
  namespace: string;
  id: string;
  image: string;
  /** 0 when the container has no task. */
  pid: number;
  /** Task status as containerd reports it (RUNNING, STOPPED, CREATED, ...); "" without a task. */
  status: string;
}

export class Ctr {
  constructor(
    readonly address: string,
    readonly bin = "ctr",
    /** Runs ctr (tests pass FakeTools). */
    readonly tools: Tools = hostTools,
  ) {}

  /** `ctr -a <sock> [-n ns] args...` → stdout. */
  exec(args: string[], ns?: string, opts?: ToolOptions): Promise<string> {
    // Fail fast when the daemon is gone (ctr's default is to wait for the socket).
    const base = [this.bin, "-a", this.address, "--connect-timeout", "3s"];
    if (ns) base.push("-n", ns);
    return this.tools.exec([...base, ...args], opts);
  }

  async version(opts?: ToolOptions): Promise<string> {
    const out = await this.exec(["version"], undefined, opts);
    return /Server:[\s\S]*?Version:\s*(\S+)/.exec(out)?.[1] ?? "";
  }

  async namespaces(opts?: ToolOptions): Promise<string[]> {
    return lines(await this.exec(["namespaces", "ls", "-q"], undefined, opts));
  }

  async ensureNamespaces(names: string[], opts?: ToolOptions): Promise<void> {
    const have = new Set(await this.namespaces(opts));
    for (const n of names) if (!have.has(n)) await this.exec(["namespaces", "create", n], undefined, opts);
  }

  async listContainers(ns: string, opts?: ToolOptions): Promise<ContainerSummary[]> {
    const [containers, tasks] = await Promise.all([this.exec(["containers", "ls"], ns, opts), this.exec(["tasks", "ls"], ns, opts)]);
    const taskById = new Map<string, { pid: number; status: string }>();
    for (const l of lines(tasks).slice(1)) {
      const [id, pid, status] = l.split(/\s+/);
      taskById.set(id, { pid: Number(pid) || 0, status: status ?? "" });
    }
    return lines(containers)
      .slice(1)
      .map((l) => {
        const [id, image] = l.split(/\s+/);
        const t = taskById.get(id);
        return { namespace: ns, id, image: image === "-" ? "" : image, pid: t?.pid ?? 0, status: t?.status ?? "" };
      });
  }

  async task(ns: string, id: string, opts?: ToolOptions): Promise<{ pid: number; status: string } | undefined> {
    for (const l of lines(await this.exec(["tasks", "ls"], ns, opts)).slice(1)) {
      const [tid, pid, status] = l.split(/\s+/);
      if (tid === id) return { pid: Number(pid) || 0, status };
    }
    return undefined;
  }

  /** Container labels (from `containers info`), e.g. where its log goes. */
  async labels(ns: string, id: string, opts?: ToolOptions): Promise<Record<string, string>> {
    const info = JSON.parse(await this.exec(["containers", "info", id], ns, opts)) as { Labels?: Record<string, string> };
    return info.Labels ?? {};
  }

  /** Signal every process of the task; SIGTERM alone does not stop a PID 1 without a handler. */
  async kill(ns: string, id: string, signal: "SIGTERM" | "SIGKILL", opts?: ToolOptions): Promise<void> {
    await this.exec(["tasks", "kill", "--all", "-s", signal, id], ns, opts);
  }

  /** Remove whatever a previous run left behind (task, container); missing pieces are fine. */
  async cleanup(ns: string, id: string, opts?: ToolOptions): Promise<void> {
    const quiet = (p: Promise<unknown>) => p.catch(() => undefined);
    const t = await quiet(this.task(ns, id, opts));
    if (t && (t as { status: string }).status !== "STOPPED") {
      await quiet(this.kill(ns, id, "SIGKILL", opts));
      for (let i = 0; i < 50; i++) {
        const cur = await quiet(this.task(ns, id, opts));
        if (!cur || (cur as { status: string }).status === "STOPPED") break;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    await quiet(this.exec(["tasks", "delete", "-f", id], ns, opts));
    await quiet(this.exec(["containers", "delete", id], ns, opts));
  }
}

function lines(s: string): string[] {
  return s.split("\n").map((l) => l.trim()).filter(Boolean);
}

/** Where a service's image comes from: the mirrors folder containerd reads (hosts.toml per registry). */
export interface ImageSource {
  /** `<dir>/<registry>/hosts.toml` folder (upstream's /etc/cri/conf.d/hosts); absent: pull from the registry itself. */
  hostsDir?: string;
  /** The endpoints that will be tried, for the error message (mirrors, then the registry unless skipped). */
  endpoints?: (ref: string) => string[];
}

/**
 * The image a service runs, pulled into `ns` unless it is there already (upstream's service PreFunc pull). A pull
 * that fails names the reference and every endpoint tried.
 */
export async function ensureImage(ctr: Ctr, ns: string, ref: string, src: ImageSource = {}, signal?: AbortSignal): Promise<void> {
  const listed = await ctr.exec(["images", "ls", "-q", `name==${ref}`], ns, { signal }).catch(() => "");
  if (listed.split("\n").some((l) => l.trim() === ref)) return;
  const args = ["images", "pull"];
  if (src.hostsDir) args.push("--hosts-dir", src.hostsDir);
  try {
    await ctr.exec([...args, ref], ns, { signal, timeoutMs: 30 * 60_000 });
  } catch (err) {
    const tried = src.endpoints?.(ref) ?? [];
    const where = tried.length ? ` (tried ${tried.join(", ")})` : "";
    throw new Error(`failed to pull image ${JSON.stringify(ref)}${where}: ${(err as Error).message.split("\n")[0]}`);
  }
}
