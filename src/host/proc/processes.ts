/**
 * /proc/<pid>/* → machine.ProcessInfo, mirroring upstream's miniprocfs walk: processes whose `exe` link
 * or cmdline cannot be read (kernel threads, zombies, other users' processes without privilege) are skipped.
 */
import { readFile, readdir, readlink } from "node:fs/promises";
import { endianness } from "node:os";
import type { ProcessInfo } from "../../machinery/api/gen/machine/machine_pb.js";
import { type Plain, type RootOptions, hostPath } from "./fs.js";

export type ProcessInfoInit = Plain<ProcessInfo>;

export interface ProcessesOptions extends RootOptions {
  /** Bytes per page for converting RSS pages; defaults to the running kernel's page size. */
  pageSize?: number;
}

const USER_HZ = 100;
/** Upstream reads each file with one 16 KiB read, so longer command lines come back truncated. */
const READ_LIMIT = 16 * 1024;

export interface ProcStat {
  state: string;
  ppid: number;
  threads: number;
  utime: number;
  stime: number;
  vsize: bigint;
  rssPages: bigint;
}

/** Parses /proc/<pid>/stat; the command name may contain spaces and ')' so fields start after the last ')'. */
export function parseProcStat(text: string): ProcStat {
  const r = text.lastIndexOf(")");
  if (r < 0) throw new Error("malformed /proc/<pid>/stat: no ')'");
  const f = text.slice(r + 2).trim().split(/\s+/);
  if (f.length < 22) throw new Error("malformed /proc/<pid>/stat: too few fields");
  return {
    state: f[0],
    ppid: Number(f[1]),
    utime: Number(f[11]),
    stime: Number(f[12]),
    threads: Number(f[17]),
    vsize: BigInt(f[20]),
    rssPages: BigInt(f[21]),
  };
}

/** cmdline is NUL-separated; upstream drops trailing NULs and joins the rest with spaces. */
export function formatArgs(cmdline: Buffer): string {
  let end = cmdline.length;
  while (end > 0 && cmdline[end - 1] === 0) end--;
  return cmdline.subarray(0, end).toString("utf8").replaceAll("\0", " ");
}

let cachedPageSize: number | undefined;

/** Page size from AT_PAGESZ in our own auxv (Node has no getpagesize); 4096 if that cannot be read. */
export async function kernelPageSize(): Promise<number> {
  if (cachedPageSize !== undefined) return cachedPageSize;
  cachedPageSize = 4096;
  try {
    const auxv = await readFile("/proc/self/auxv");
    const le = endianness() === "LE";
    for (let o = 0; o + 16 <= auxv.length; o += 16) {
      const type = le ? auxv.readBigUInt64LE(o) : auxv.readBigUInt64BE(o);
      const value = le ? auxv.readBigUInt64LE(o + 8) : auxv.readBigUInt64BE(o + 8);
      if (type === 6n /* AT_PAGESZ */) cachedPageSize = Number(value);
      if (type === 0n) break;
    }
  } catch {
    // keep the default
  }
  return cachedPageSize;
}

async function readLimited(file: string): Promise<Buffer> {
  const buf = await readFile(file);
  return buf.length > READ_LIMIT ? buf.subarray(0, READ_LIMIT) : buf;
}

async function readProcess(dir: string, pid: number, pageSize: number): Promise<ProcessInfoInit | undefined> {
  try {
    const executable = await readlink(`${dir}/exe`);
    const [comm, cmdline, statText] = await Promise.all([
      readLimited(`${dir}/comm`),
      readLimited(`${dir}/cmdline`),
      readLimited(`${dir}/stat`),
    ]);
    if (cmdline.length === 0) return undefined;
    const st = parseProcStat(statText.toString("utf8"));
    let label = "";
    try {
      label = (await readLimited(`${dir}/attr/current`)).toString("utf8").replace(/^[\0\n]+|[\0\n]+$/g, "");
    } catch {
      // no LSM exposes a label here
    }
    return {
      pid,
      ppid: st.ppid,
      state: st.state,
      threads: st.threads,
      cpuTime: (st.utime + st.stime) / USER_HZ,
      virtualMemory: st.vsize,
      residentMemory: st.rssPages * BigInt(pageSize),
      command: comm.toString("utf8").trim(),
      executable,
      args: formatArgs(cmdline),
      label,
    };
  } catch {
    return undefined; // the process exited or is not ours to inspect
  }
}

export async function readProcesses(opts?: ProcessesOptions): Promise<ProcessInfoInit[]> {
  const pageSize = opts?.pageSize ?? (await kernelPageSize());
  const proc = hostPath(opts, "proc");
  const pids = (await readdir(proc)).filter((n) => /^\d+$/.test(n)).map(Number).sort((a, b) => a - b);
  const out: ProcessInfoInit[] = [];
  // Bounded batches keep file-descriptor use modest on hosts with thousands of processes.
  for (let i = 0; i < pids.length; i += 64) {
    const batch = await Promise.all(pids.slice(i, i + 64).map((pid) => readProcess(`${proc}/${pid}`, pid, pageSize)));
    for (const p of batch) if (p) out.push(p);
  }
  return out;
}
