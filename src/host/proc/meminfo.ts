/** /proc/meminfo → machine.MemInfo (values stay in kB, as talosctl `memory` expects). */
import type { MemInfo } from "../../machinery/api/gen/machine/machine_pb.js";
import { type Plain, type RootOptions, readText } from "./fs.js";

export type MemInfoInit = Plain<MemInfo>;

/** /proc/meminfo key (without the colon) → MemInfo field. Keys the message lacks are ignored. */
const KEYS: Record<string, keyof MemInfoInit> = {
  MemTotal: "memtotal",
  MemFree: "memfree",
  MemAvailable: "memavailable",
  Buffers: "buffers",
  Cached: "cached",
  SwapCached: "swapcached",
  Active: "active",
  Inactive: "inactive",
  "Active(anon)": "activeanon",
  "Inactive(anon)": "inactiveanon",
  "Active(file)": "activefile",
  "Inactive(file)": "inactivefile",
  Unevictable: "unevictable",
  Mlocked: "mlocked",
  SwapTotal: "swaptotal",
  SwapFree: "swapfree",
  Dirty: "dirty",
  Writeback: "writeback",
  AnonPages: "anonpages",
  Mapped: "mapped",
  Shmem: "shmem",
  Slab: "slab",
  SReclaimable: "sreclaimable",
  SUnreclaim: "sunreclaim",
  KernelStack: "kernelstack",
  PageTables: "pagetables",
  NFS_Unstable: "nfsunstable",
  Bounce: "bounce",
  WritebackTmp: "writebacktmp",
  CommitLimit: "commitlimit",
  Committed_AS: "committedas",
  VmallocTotal: "vmalloctotal",
  VmallocUsed: "vmallocused",
  VmallocChunk: "vmallocchunk",
  HardwareCorrupted: "hardwarecorrupted",
  AnonHugePages: "anonhugepages",
  ShmemHugePages: "shmemhugepages",
  ShmemPmdMapped: "shmempmdmapped",
  CmaTotal: "cmatotal",
  CmaFree: "cmafree",
  HugePages_Total: "hugepagestotal",
  HugePages_Free: "hugepagesfree",
  HugePages_Rsvd: "hugepagesrsvd",
  HugePages_Surp: "hugepagessurp",
  Hugepagesize: "hugepagesize",
  DirectMap4k: "directmap4k",
  DirectMap2M: "directmap2m",
  DirectMap1G: "directmap1g",
};

export function parseMeminfo(text: string): MemInfoInit {
  // Fields the kernel does not report (e.g. DirectMap1G on arm64) stay 0, like upstream.
  const info = Object.fromEntries(Object.values(KEYS).map((k) => [k, 0n])) as MemInfoInit;
  for (const line of text.split("\n")) {
    const m = /^([^:\s]+):\s+(\d+)/.exec(line);
    const field = m && KEYS[m[1]];
    if (field) info[field] = BigInt(m[2]);
  }
  return info;
}

export async function readMeminfo(opts?: RootOptions): Promise<MemInfoInit> {
  return parseMeminfo(await readText(opts, "proc/meminfo"));
}
