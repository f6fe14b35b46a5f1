/**
 * Per-service cgroups (v2): `<cgroup2 mount>/<prefix>/<id>` with an optional memory.max.
 *
 * Where the machine offers no writable cgroup v2 (or v2 without the memory controller, as in a hybrid
 * layout where memory is bound to v1), services still run: we log once and carry on without the feature.
 */
import { readdirSync, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Where cgroup2 is mounted: /sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a hybrid one. */
export function findCgroup2Mount(mountsFile = "/proc/self/mounts"): string | null {
  let text: string;
  try {
    text = readFileSync(mountsFile, "utf8");
  } catch {
    return null;
  }
  const points = text
    .split("\n")
    .map((l) => l.split(" "))
    .filter((f) => f[2] === "cgroup2")
    .map((f) => f[1]);
  for (const preferred of ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]) if (points.includes(preferred)) return preferred;
  return points[0] ?? null;
}

export interface CgroupLimits {
  memoryMaxBytes?: number;
}

export interface ServiceCgroup {
  readonly path: string;
  addProcess(pid: number): void;
  /** PIDs currently in the cgroup. */
  procs(): number[];
  /** SIGKILL everything in the cgroup (cgroup.kill, or per-PID where the kernel lacks it). */
  kill(): void;
  /** rmdir; retried briefly because just-killed processes take a moment to leave. */
  remove(): Promise<void>;
}

export interface CgroupManager {
  create(id: string, limits?: CgroupLimits): ServiceCgroup | null;
}

export interface CgroupOptions {
  /** cgroup2 mount; default: detected. null disables cgroups. */
  root?: string | null;
  /** Parent folder under the root; default "machined". */
  prefix?: string;
  /** Called once per degradation reason. */
  log?: (msg: string) => void;
}

export class Cgroups implements CgroupManager {
  readonly root: string | null;
  readonly prefix: string;
  private readonly log: (msg: string) => void;
  private readonly logged = new Set<string>();
  private parentReady: boolean | null = null;
  private memory = false;

  constructor(opts: CgroupOptions = {}) {
    this.root = opts.root === undefined ? findCgroup2Mount() : opts.root;
    this.prefix = opts.prefix ?? "machined";
    this.log = opts.log ?? (() => {});
  }

  /** Whether memory limits are actually applied (known after the first create). */
  get memoryLimitsEnabled(): boolean {
    return this.memory;
  }

  create(id: string, limits: CgroupLimits = {}): ServiceCgroup | null {
    if (!this.ensureParent()) return null;
    const path = join(this.root as string, this.prefix, id);
    try {
      mkdirSync(path, { recursive: true });
    } catch (e) {
      this.once("mkdir", `cgroups: cannot create ${path}: ${(e as Error).message}; running services without cgroups`);
      return null;
    }
    if (limits.memoryMaxBytes !== undefined) {
      if (!this.memory) {
        this.once("nomem", `cgroups: memory controller not available in cgroup v2 at ${this.root}; memory limits disabled`);
      } else {
        try {
          writeFileSync(join(path, "memory.max"), String(limits.memoryMaxBytes));
        } catch (e) {
          this.once(`memmax-${id}`, `cgroups: cannot set memory.max for ${id}: ${(e as Error).message}`);
        }
      }
    }
    return new V2Cgroup(path);
  }

  private ensureParent(): boolean {
    if (this.parentReady !== null) return this.parentReady;
    if (!this.root || !existsSync(join(this.root, "cgroup.controllers"))) {
      this.once("nov2", "cgroups: no cgroup v2 mount found; running services without cgroups");
      return (this.parentReady = false);
    }
    const parent = join(this.root, this.prefix);
    try {
      mkdirSync(parent, { recursive: true });
    } catch (e) {
      this.once("ro", `cgroups: ${this.root} is not writable (${(e as Error).message}); running services without cgroups`);
      return (this.parentReady = false);
    }
    const available = readFileSync(join(this.root, "cgroup.controllers"), "utf8").split(/\s+/);
    if (available.includes("memory")) {
      try {
        // Controllers must be delegated level by level down to the service cgroups.
        writeFileSync(join(this.root, "cgroup.subtree_control"), "+memory");
        writeFileSync(join(parent, "cgroup.subtree_control"), "+memory");
        this.memory = true;
      } catch (e) {
        this.once("deleg", `cgroups: cannot enable the memory controller: ${(e as Error).message}`);
      }
    }
    return (this.parentReady = true);
  }

  /**
   * Kill processes left in this prefix's cgroups by an earlier run that died without stopping its
   * services (e.g. SIGKILL of a local-mode agent): they would hold ports and data folders. Returns the
   * pids signalled. Only ever touches cgroups under our own prefix.
   */
  /** Remove this manager's own folder when the process ends; never created, or still busy, is fine. */
  removeOwnRoot(): void {
    if (!this.root) return;
    try {
      rmdirSync(join(this.root, this.prefix));
    } catch {
      // the next start reuses it
    }
  }

  reapLeftovers(): number[] {
    if (!this.root) return [];
    const parent = join(this.root, this.prefix);
    if (!existsSync(parent)) return [];
    const killed: number[] = [];
    for (const name of readdirSync(parent, { withFileTypes: true })) {
      if (!name.isDirectory()) continue;
      const dir = join(parent, name.name);
      let pids: number[] = [];
      try {
        pids = readFileSync(join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean).map(Number);
      } catch {
        continue;
      }
      for (const pid of pids) {
        try {
          process.kill(pid, "SIGKILL");
          killed.push(pid);
        } catch {
          // already gone
        }
      }
    }
    if (killed.length) this.log(`cgroups: killed ${killed.length} process(es) left by an earlier run under ${parent}`);
    return killed;
  }

  private once(key: string, msg: string): void {
    if (this.logged.has(key)) return;
    this.logged.add(key);
    this.log(msg);
  }
}

class V2Cgroup implements ServiceCgroup {
  constructor(readonly path: string) {}

  addProcess(pid: number): void {
    try {
      writeFileSync(join(this.path, "cgroup.procs"), String(pid));
    } catch {
      // ESRCH: the process already exited; nothing to account.
    }
  }

  procs(): number[] {
    try {
      return readFileSync(join(this.path, "cgroup.procs"), "utf8")
        .split("\n")
        .filter(Boolean)
        .map(Number);
    } catch {
      return [];
    }
  }

  kill(): void {
    try {
      writeFileSync(join(this.path, "cgroup.kill"), "1");
      return;
    } catch {
      // Kernels before 5.14 have no cgroup.kill.
    }
    for (const pid of this.procs()) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }

  async remove(): Promise<void> {
    for (let i = 0; i < 50; i++) {
      try {
        rmdirSync(this.path);
        return;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === "ENOENT") return;
        if (code !== "EBUSY") return;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

/** The in-memory stand-in: no cgroups at all. */
export const noCgroups: CgroupManager = { create: () => null };
