/**
 * cgroup v1 hierarchies (this project's hosts are v1 with an empty unified tree). The kubelet needs its cgroup root
 * to exist in every v1 hierarchy before it starts; a local-mode sandbox gives it a folder of its own there.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = "/sys/fs/cgroup";

/** True when the machine has cgroup v1 controllers mounted (no unified hierarchy at /sys/fs/cgroup itself). */
export function isCgroupV1(root = ROOT): boolean {
  return !existsSync(join(root, "cgroup.controllers")) && existsSync(join(root, "memory"));
}

/** Create `/<name>` in every v1 hierarchy (cpuset initialised from its parent, as a child needs it). */
export function ensureV1Folder(name: string, root = ROOT): void {
  for (const h of readdirSync(root)) {
    const dir = join(root, h);
    if (h === "unified" || !existsSync(join(dir, "cgroup.procs"))) continue;
    const target = join(dir, name);
    mkdirSync(target, { recursive: true });
    if (h === "cpuset" || h.split(",").includes("cpuset")) {
      for (const f of ["cpuset.cpus", "cpuset.mems"]) {
        const mine = readFileSync(join(target, f), "utf8").trim();
        if (!mine) writeFileSync(join(target, f), readFileSync(join(dir, f), "utf8"));
      }
    }
  }
}

/**
 * SIGKILL every process under `/<name>` in the v1 tree (read from the pids hierarchy, or memory): what an earlier
 * run of this node left behind (containers whose shims outlived their containerd). Returns the PIDs killed.
 */
export function reapV1Folder(name: string, root = ROOT): number[] {
  const base = [join(root, "pids", name), join(root, "memory", name)].find((d) => existsSync(d));
  if (!base) return [];
  const killed: number[] = [];
  const visit = (dir: string) => {
    let entries: import("node:fs").Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const pid of readFileSync(join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean).map(Number)) {
      try {
        process.kill(pid, "SIGKILL");
        killed.push(pid);
      } catch {
        // already gone
      }
    }
    for (const e of entries) if (e.isDirectory()) visit(join(dir, e.name));
  };
  visit(base);
  return killed;
}

/** Remove `/<name>` and everything below it from every v1 hierarchy (empty cgroups only; busy ones stay). */
export function removeV1Folder(name: string, root = ROOT): void {
  const rm = (dir: string) => {
    let entries: import("node:fs").Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectory()) rm(join(dir, e.name));
    try {
      rmdirSync(dir);
    } catch {
      // still has processes (or is not ours to remove): left for the next start's reaping
    }
  };
  for (const h of readdirSync(root)) {
    const dir = join(root, h, name);
    if (existsSync(dir)) rm(dir);
  }
}
