/**
 * Memory and CPU use of a process's cgroup (v2), what `talosctl stats` shows per container: the cgroup comes
 * from /proc/<pid>/cgroup ("0::/path"), the numbers from its memory.current and cpu.stat.
 */
import { hostFiles, type Files } from "../files/index.js";

export interface CgroupUsage {
  /** Bytes. */
  memory: bigint;
  /** Nanoseconds. */
  cpu: bigint;
}

/** undefined when the host does not tell (cgroup v1, the process is gone, the files are missing). */
export async function readCgroupUsage(pid: number, files: Files = hostFiles): Promise<CgroupUsage | undefined> {
  try {
    const line = (await files.readFile(`/proc/${pid}/cgroup`, "utf8")).split("\n").find((l) => l.startsWith("0::"));
    if (!line) return undefined;
    const dir = `/sys/fs/cgroup${line.slice(3)}`;
    const memory = BigInt((await files.readFile(`${dir}/memory.current`, "utf8")).trim());
    const usec = /usage_usec (\d+)/.exec(await files.readFile(`${dir}/cpu.stat`, "utf8"))?.[1] ?? "0";
    return { memory, cpu: BigInt(usec) * 1000n };
  } catch {
    return undefined;
  }
}
