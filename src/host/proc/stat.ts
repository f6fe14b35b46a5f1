/** /proc/stat → machine.SystemStat (CPU times converted from USER_HZ ticks to seconds, as upstream). */
import type { CPUStat, SoftIRQStat, SystemStat } from "../../machinery/api/gen/machine/machine_pb.js";
import { type Plain, type RootOptions, readText, u64 } from "./fs.js";

export type SystemStatInit = Plain<SystemStat>;
export type CPUStatInit = Plain<CPUStat>;
export type SoftIRQStatInit = Plain<SoftIRQStat>;

/** The kernel reports CPU times in USER_HZ, which is 100 on every Linux ABI (upstream hardcodes it too). */
const USER_HZ = 100;

const CPU_FIELDS = ["user", "nice", "system", "idle", "iowait", "irq", "softIrq", "steal", "guest", "guestNice"] as const;
const SOFTIRQ_FIELDS = ["hi", "timer", "netTx", "netRx", "block", "blockIoPoll", "tasklet", "sched", "hrtimer", "rcu"] as const;

function zeroCpu(): CPUStatInit {
  return Object.fromEntries(CPU_FIELDS.map((f) => [f, 0])) as CPUStatInit;
}

function parseCpu(values: string[]): CPUStatInit {
  const cpu = zeroCpu();
  // Older kernels print fewer columns; missing ones stay 0.
  CPU_FIELDS.forEach((f, i) => {
    const v = Number(values[i]);
    if (values[i] !== undefined && Number.isFinite(v)) cpu[f] = v / USER_HZ;
  });
  return cpu;
}

export function parseStat(text: string): SystemStatInit {
  const stat: SystemStatInit = {
    bootTime: 0n,
    cpuTotal: zeroCpu(),
    cpu: [],
    irqTotal: 0n,
    irq: [],
    contextSwitches: 0n,
    processCreated: 0n,
    processRunning: 0n,
    processBlocked: 0n,
    softIrqTotal: 0n,
    softIrq: Object.fromEntries(SOFTIRQ_FIELDS.map((f) => [f, 0n])) as SoftIRQStatInit,
  };
  const perCpu = new Map<number, CPUStatInit>();
  for (const line of text.split("\n")) {
    const [key, ...rest] = line.trim().split(/\s+/);
    if (!key || rest.length === 0) continue;
    if (key === "cpu") stat.cpuTotal = parseCpu(rest);
    else if (/^cpu\d+$/.test(key)) perCpu.set(Number(key.slice(3)), parseCpu(rest));
    else if (key === "btime") stat.bootTime = u64(rest[0]);
    else if (key === "intr") {
      stat.irqTotal = u64(rest[0]);
      stat.irq = rest.slice(1).map(u64);
    } else if (key === "ctxt") stat.contextSwitches = u64(rest[0]);
    else if (key === "processes") stat.processCreated = u64(rest[0]);
    else if (key === "procs_running") stat.processRunning = u64(rest[0]);
    else if (key === "procs_blocked") stat.processBlocked = u64(rest[0]);
    else if (key === "softirq") {
      stat.softIrqTotal = u64(rest[0]);
      SOFTIRQ_FIELDS.forEach((f, i) => (stat.softIrq![f] = u64(rest[i + 1])));
    }
  }
  // Indexed by CPU number like upstream; offline CPUs leave zeroed holes rather than shifting the list.
  const max = Math.max(-1, ...perCpu.keys());
  for (let i = 0; i <= max; i++) stat.cpu.push(perCpu.get(i) ?? zeroCpu());
  return stat;
}

export async function readStat(opts?: RootOptions): Promise<SystemStatInit> {
  return parseStat(await readText(opts, "proc/stat"));
}
