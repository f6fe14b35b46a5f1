/**
 * cgroup v1 hierarchies (this project's hosts are v1 with an empty unified tree). The kubelet needs its cgroup root
 * to exist in every v1 hierarchy before it starts; a local-mode sandbox gives it a folder of its own there.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
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
