/**
 * /proc/diskstats → machine.DiskStats devices + total. Like upstream, every line with the 15 classic
 * counters is reported (partitions and loop devices included) and the total's name is empty.
 */
import type { DiskStat } from "../../machinery/api/gen/machine/machine_pb.js";
import { type Plain, type RootOptions, readText, u64 } from "./fs.js";

export type DiskStatInit = Plain<DiskStat>;

const COUNTERS = [
  "readCompleted", "readMerged", "readSectors", "readTimeMs", "writeCompleted", "writeMerged", "writeSectors",
  "writeTimeMs", "ioInProgress", "ioTimeMs", "ioTimeWeightedMs", "discardCompleted", "discardMerged",
  "discardSectors", "discardTimeMs",
] as const;

function zero(name: string): DiskStatInit {
  return { name, ...Object.fromEntries(COUNTERS.map((c) => [c, 0n])) } as DiskStatInit;
}

export function parseDiskstats(text: string): { total: DiskStatInit; devices: DiskStatInit[] } {
  const devices: DiskStatInit[] = [];
  for (const line of text.split("\n")) {
    const f = line.trim().split(/\s+/);
    // major minor name + 15 counters; pre-4.18 kernels (no discard columns) are skipped, as upstream does.
    if (f.length < 18) continue;
    const dev = zero(f[2]);
    COUNTERS.forEach((c, i) => (dev[c] = u64(f[3 + i])));
    devices.push(dev);
  }
  const total = zero("");
  for (const d of devices) for (const c of COUNTERS) total[c] += d[c];
  return { total, devices };
}

export async function readDiskstats(opts?: RootOptions) {
  return parseDiskstats(await readText(opts, "proc/diskstats"));
}
