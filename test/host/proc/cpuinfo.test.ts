import { create } from "@bufbuild/protobuf";
import { readFileSync } from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { CPUInfoSchema } from "../../../src/machinery/api/gen/machine/machine_pb.js";
import { parseCpuinfo, readCpuinfo } from "../../../src/host/proc/cpuinfo.js";

const FIX = new URL("../fixtures/", import.meta.url);
const ROOT = fileURLToPath(new URL("x86", FIX));

describe("cpuinfo", () => {
  it("parses x86 /proc/cpuinfo (captured AMD EPYC guest)", async () => {
    const cpus = await readCpuinfo({ root: ROOT });
    expect(cpus.map((c) => c.processor)).toEqual([0, 1]);
    const c = cpus[1];
    expect(c).toMatchObject({
      vendorId: "AuthenticAMD", cpuFamily: "23", model: "1", modelName: "AMD EPYC", stepping: "2",
      microcode: "0x1000065", cpuMhz: 1996.25, cacheSize: "512 KB", physicalId: "0", siblings: 2, coreId: "1",
      cpuCores: 2, apicId: "1", initialApicId: "1", fpu: "yes", fpuException: "yes", cpuIdLevel: 13, wp: "yes",
      bogoMips: 3992.5, clFlushSize: 64, cacheAlignment: 64, addressSizes: "48 bits physical, 48 bits virtual",
      powerManagement: "",
    });
    expect(c.flags).toContain("sse4_2");
    expect(c.flags).not.toContain("");
    expect(c.bugs).toEqual(expect.arrayContaining(["spectre_v1", "spectre_v2_user"]));
    expect(Object.keys(c)).toHaveLength(26);
    expect(create(CPUInfoSchema, c).modelName).toBe("AMD EPYC");
  });

  it("parses arm64 /proc/cpuinfo, sharing the Features line across CPUs", () => {
    const cpus = parseCpuinfo(readFileSync(new URL("cpuinfo-arm64.txt", FIX), "utf8"));
    expect(cpus).toHaveLength(2);
    expect(cpus[1].processor).toBe(1);
    expect(cpus[1].bogoMips).toBe(50);
    expect(cpus[0].flags).toEqual(["fp", "asimd", "evtstrm", "aes", "pmull", "sha1", "sha2", "crc32", "atomics", "fphp", "asimdhp", "cpuid", "asimdrdm", "lrcpc", "dcpop", "asimddp", "ssbs"]);
    expect(cpus[0].vendorId).toBe("");
  });

  it("reads one entry per CPU of this machine", async () => {
    const cpus = await readCpuinfo();
    expect(cpus).toHaveLength(os.cpus().length);
    expect(cpus.every((c) => c.bogoMips > 0)).toBe(true);
  });
});
