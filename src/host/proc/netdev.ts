/** /proc/net/dev → machine.NetworkDeviceStats devices + total. */
import type { NetDev } from "../../machinery/api/gen/machine/machine_pb.js";
import { type Plain, type RootOptions, readText, u64 } from "./fs.js";

export type NetDevInit = Plain<NetDev>;

const COUNTERS = [
  "rxBytes", "rxPackets", "rxErrors", "rxDropped", "rxFifo", "rxFrame", "rxCompressed", "rxMulticast",
  "txBytes", "txPackets", "txErrors", "txDropped", "txFifo", "txCollisions", "txCarrier", "txCompressed",
] as const;

function zero(name: string): NetDevInit {
  return { name, ...Object.fromEntries(COUNTERS.map((c) => [c, 0n])) } as NetDevInit;
}

export function parseNetDev(text: string): { total: NetDevInit; devices: NetDevInit[] } {
  const devices: NetDevInit[] = [];
  for (const line of text.split("\n")) {
    // The two header lines contain "|"; data lines are "  name: c1 c2 ...". Names may contain ':' (aliases).
    const i = line.lastIndexOf(":");
    if (i < 0 || line.includes("|")) continue;
    const name = line.slice(0, i).trim();
    const values = line.slice(i + 1).trim().split(/\s+/);
    if (!name || values.length < COUNTERS.length) continue;
    const dev = zero(name);
    COUNTERS.forEach((c, j) => (dev[c] = u64(values[j])));
    devices.push(dev);
  }
  // Upstream's total names every device, sorted, joined with ", ".
  const total = zero(devices.map((d) => d.name).sort().join(", "));
  for (const d of devices) for (const c of COUNTERS) total[c] += d[c];
  return { total, devices };
}

export async function readNetDev(opts?: RootOptions) {
  return parseNetDev(await readText(opts, "proc/net/dev"));
}
