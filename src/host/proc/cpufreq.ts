/** /sys/devices/system/cpu/cpu*\/cpufreq → machine.CPUFreqStats list (kHz), empty when the kernel has no cpufreq. */
import { readdir, readFile } from "node:fs/promises";
import type { CPUFreqStats } from "../../machinery/api/gen/machine/machine_pb.js";
import { type Plain, type RootOptions, hostPath } from "./fs.js";

export type CPUFreqStatsInit = Plain<CPUFreqStats>;

const CPU_DIR = "sys/devices/system/cpu";

async function readOpt(file: string): Promise<string | undefined> {
  try {
    return (await readFile(file, "utf8")).trim();
  } catch {
    return undefined;
  }
}

/** Parses a CPU list like "0-3,8" (the format of .../cpu/offline). */
export function parseCpuList(text: string): Set<number> {
  const out = new Set<number>();
  for (const part of text.trim().split(",").filter(Boolean)) {
    const [a, b] = part.split("-").map(Number);
    for (let i = a; i <= (b ?? a); i++) out.add(i);
  }
  return out;
}

export async function readCpufreq(opts?: RootOptions): Promise<CPUFreqStatsInit[]> {
  let names: string[];
  try {
    names = await readdir(hostPath(opts, CPU_DIR));
  } catch {
    return [];
  }
  const offline = parseCpuList((await readOpt(hostPath(opts, CPU_DIR, "offline"))) ?? "");
  const cpus = names
    .filter((n) => /^cpu\d+$/.test(n))
    .map((n) => Number(n.slice(3)))
    .filter((n) => !offline.has(n))
    .sort((a, b) => a - b);
  const out: CPUFreqStatsInit[] = [];
  for (const cpu of cpus) {
    const dir = hostPath(opts, CPU_DIR, `cpu${cpu}`, "cpufreq");
    const [hwCur, scalingCur, min, max, governor] = await Promise.all(
      ["cpuinfo_cur_freq", "scaling_cur_freq", "cpuinfo_min_freq", "cpuinfo_max_freq", "scaling_governor"].map((f) =>
        readOpt(`${dir}/${f}`),
      ),
    );
    // cpuinfo_cur_freq is root-only and absent with some drivers (intel_pstate); the scaling value is the
    // kernel's best estimate then, which beats the empty entry upstream would send.
    const cur = hwCur ?? scalingCur;
    if (cur === undefined && min === undefined && max === undefined && governor === undefined) continue;
    // Upstream sends an empty entry when any of the three frequencies is unreadable.
    const ok = [cur, min, max].every((v) => v !== undefined && /^\d+$/.test(v));
    out.push(
      ok
        ? { currentFrequency: BigInt(cur!), minimumFrequency: BigInt(min!), maximumFrequency: BigInt(max!), governor: governor ?? "" }
        : { currentFrequency: 0n, minimumFrequency: 0n, maximumFrequency: 0n, governor: "" },
    );
  }
  return out;
}
