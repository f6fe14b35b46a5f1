/** /proc/loadavg → machine.LoadAvg load1/5/15. */
import type { LoadAvg } from "../../machinery/api/gen/machine/machine_pb.js";
import { type Plain, type RootOptions, readText } from "./fs.js";

export type LoadAvgInit = Plain<LoadAvg>;

export function parseLoadavg(text: string): LoadAvgInit {
  const [l1, l5, l15] = text.trim().split(/\s+/);
  const n = (s: string | undefined) => {
    const v = Number(s);
    if (s === undefined || !Number.isFinite(v)) throw new Error(`malformed /proc/loadavg: ${JSON.stringify(text)}`);
    return v;
  };
  return { load1: n(l1), load5: n(l5), load15: n(l15) };
}

export async function readLoadavg(opts?: RootOptions): Promise<LoadAvgInit> {
  return parseLoadavg(await readText(opts, "proc/loadavg"));
}
