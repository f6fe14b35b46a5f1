/** /proc/cpuinfo → machine.CPUInfo list, following procfs' x86 and ARM layouts (what upstream uses). */
import type { CPUInfo } from "../../machinery/api/gen/machine/machine_pb.js";
import { type Plain, type RootOptions, readText } from "./fs.js";

export type CPUInfoInit = Plain<CPUInfo>;

function emptyCpu(processor = 0): CPUInfoInit {
  return {
    processor, vendorId: "", cpuFamily: "", model: "", modelName: "", stepping: "", microcode: "", cpuMhz: 0,
    cacheSize: "", physicalId: "", siblings: 0, coreId: "", cpuCores: 0, apicId: "", initialApicId: "", fpu: "",
    fpuException: "", cpuIdLevel: 0, wp: "", flags: [], bugs: [], bogoMips: 0, clFlushSize: 0, cacheAlignment: 0,
    addressSizes: "", powerManagement: "",
  };
}

/** Splits "key\t\t: value" lines; a line like "power management:" has an empty value. */
function fields(text: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const line of text.split("\n")) {
    const i = line.indexOf(":");
    if (i < 0) continue;
    out.push([line.slice(0, i).trim(), line.slice(i + 1).replace(/^ /, "")]);
  }
  return out;
}

const int = (v: string) => {
  const n = Number.parseInt(v, v.trim().startsWith("0x") ? 16 : 10);
  return Number.isFinite(n) ? n : 0;
};
const float = (v: string) => {
  const n = Number.parseFloat(v);
  return Number.isFinite(n) ? n : 0;
};

const X86: Record<string, (c: CPUInfoInit, v: string) => void> = {
  vendor: (c, v) => (c.vendorId = v),
  vendor_id: (c, v) => (c.vendorId = v),
  "cpu family": (c, v) => (c.cpuFamily = v),
  model: (c, v) => (c.model = v),
  "model name": (c, v) => (c.modelName = v),
  stepping: (c, v) => (c.stepping = v),
  microcode: (c, v) => (c.microcode = v),
  "cpu MHz": (c, v) => (c.cpuMhz = float(v)),
  "cache size": (c, v) => (c.cacheSize = v),
  "physical id": (c, v) => (c.physicalId = v),
  siblings: (c, v) => (c.siblings = int(v)),
  "core id": (c, v) => (c.coreId = v),
  "cpu cores": (c, v) => (c.cpuCores = int(v)),
  apicid: (c, v) => (c.apicId = v),
  "initial apicid": (c, v) => (c.initialApicId = v),
  fpu: (c, v) => (c.fpu = v),
  fpu_exception: (c, v) => (c.fpuException = v),
  "cpuid level": (c, v) => (c.cpuIdLevel = int(v)),
  wp: (c, v) => (c.wp = v),
  flags: (c, v) => (c.flags = v.split(/\s+/).filter(Boolean)),
  bugs: (c, v) => (c.bugs = v.split(/\s+/).filter(Boolean)),
  bogomips: (c, v) => (c.bogoMips = float(v)),
  "clflush size": (c, v) => (c.clFlushSize = int(v)),
  cache_alignment: (c, v) => (c.cacheAlignment = int(v)),
  "address sizes": (c, v) => (c.addressSizes = v),
  "power management": (c, v) => (c.powerManagement = v),
};

function parseX86(text: string): CPUInfoInit[] {
  const cpus: CPUInfoInit[] = [];
  for (const [key, value] of fields(text)) {
    if (key === "processor") cpus.push(emptyCpu(int(value)));
    else if (cpus.length > 0) X86[key]?.(cpus[cpus.length - 1], value);
  }
  return cpus;
}

/** ARM lists per-CPU "processor"/"BogoMIPS" and one "Features" line that applies to every CPU. */
function parseArm(text: string): CPUInfoInit[] {
  const cpus: CPUInfoInit[] = [];
  let legacyModel = "";
  let features: string[] = [];
  for (const [key, value] of fields(text)) {
    if (key === "Processor") legacyModel = value; // 32-bit ARM header line
    else if (key === "processor") cpus.push({ ...emptyCpu(int(value)), modelName: legacyModel });
    else if (key === "BogoMIPS") {
      if (cpus.length === 0) cpus.push({ ...emptyCpu(0), modelName: legacyModel });
      cpus[cpus.length - 1].bogoMips = float(value);
    } else if (key === "Features") features = value.split(/\s+/).filter(Boolean);
    else if (key === "model name" && cpus.length > 0) cpus[cpus.length - 1].modelName = value;
  }
  for (const c of cpus) c.flags = [...features];
  return cpus;
}

export function parseCpuinfo(text: string): CPUInfoInit[] {
  // Upstream picks the parser by build arch; sniffing the layout lets fixtures of either arch parse anywhere.
  return /^(BogoMIPS|Features|CPU implementer)\s*:/m.test(text) ? parseArm(text) : parseX86(text);
}

export async function readCpuinfo(opts?: RootOptions): Promise<CPUInfoInit[]> {
  return parseCpuinfo(await readText(opts, "proc/cpuinfo"));
}
