/** hardware.SystemInfoController: SMBIOS (injected) or DMI attributes from an injectable root, UUID override and fallback. */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HARDWARE_NS, SystemInformationType } from "../../../src/machinery/resources/types/hardware.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { systemInfoController } from "../../../src/controllers/hardware/system-info.js";
import { eventually, put, spec, startRuntime } from "../runtime/harness.js";
import { MemoryModuleType, ProcessorType } from "../../../src/machinery/resources/types/hardware-inventory.js";
import { MetaKeyType } from "../../../src/machinery/resources/types/block.js";
import type { Smbios } from "../../../src/host/smbios.js";

describe("hardware.SystemInfoController", () => {
  it("publishes the DMI strings it can read and leaves the others out", async () => {
    const root = await mkdtemp(join(tmpdir(), "machined-dmi-"));
    try {
      const dmi = join(root, "sys/class/dmi/id");
      await mkdir(dmi, { recursive: true });
      for (const [f, v] of Object.entries({ sys_vendor: "QEMU\n", product_name: "Standard PC (Q35 + ICH9, 2009)\n", product_uuid: "3f2a0000-0000-0000-0000-000000000001\n", bios_version: "1.16.3\n" })) {
        await writeFile(join(dmi, f), v);
      }
      const s = new InMemoryState();
      startRuntime(s, [systemInfoController({ root })]);
      await eventually(() => !!spec(s, HARDWARE_NS, SystemInformationType.type, "systeminformation"), 2000, "sysinfo");
      expect(spec(s, HARDWARE_NS, SystemInformationType.type, "systeminformation")).toEqual({
        manufacturer: "QEMU",
        productName: "Standard PC (Q35 + ICH9, 2009)",
        biosVersion: "1.16.3",
        uuid: "3f2a0000-0000-0000-0000-000000000001",
      });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  const smbios: Smbios = {
    version: "3.0",
    biosVersion: "1.16.3",
    system: { manufacturer: "QEMU", productName: "Standard PC", version: "", serialNumber: "", uuid: "00112233-4455-6677-8899-aabbccddeeff", wakeUpType: "Power Switch", skuNumber: "" },
    processors: [
      { socketDesignation: "CPU 0", manufacturer: "QEMU", version: "pc CPU", maxSpeedMhz: 2000, currentSpeedMhz: 2000, status: 65, serialNumber: "", assetTag: "", partNumber: "", coreCount: 2, coreEnabled: 2, threadCount: 2 },
    ],
    memoryDevices: [{ sizeMiB: 2048, deviceLocator: "DIMM 0", bankLocator: "", speed: 0, manufacturer: "QEMU", serialNumber: "", assetTag: "", partNumber: "" }],
  };

  it("publishes SystemInformation, Processors and MemoryModules from SMBIOS; META's UUID override wins", async () => {
    const s = new InMemoryState();
    startRuntime(s, [systemInfoController({ root: "/nonexistent", smbios: async () => smbios })]);
    await eventually(() => !!spec(s, HARDWARE_NS, MemoryModuleType.type, "DIMM-0"), 2000, "memory module");
    expect(spec(s, HARDWARE_NS, SystemInformationType.type, "systeminformation")).toEqual({
      manufacturer: "QEMU",
      productName: "Standard PC",
      biosVersion: "1.16.3",
      uuid: "00112233-4455-6677-8899-aabbccddeeff",
      wakeUpType: "Power Switch",
    });
    expect(spec(s, HARDWARE_NS, ProcessorType.type, "CPU-0")).toMatchObject({ socket: "CPU 0", productName: "pc CPU", coreCount: 2, threadCount: 2 });
    expect(spec(s, HARDWARE_NS, MemoryModuleType.type, "DIMM-0")).toMatchObject({ sizeMiB: 2048, manufacturer: "QEMU" });
    put(s, "runtime", MetaKeyType.type, "0x0f", { value: "11111111-2222-3333-4444-555555555555" });
    await eventually(
      () => (spec(s, HARDWARE_NS, SystemInformationType.type, "systeminformation") as { uuid: string }).uuid === "11111111-2222-3333-4444-555555555555",
      2000,
      "override",
    );
  });

  it("without SMBIOS: machine-id as the UUID, and one UNKNOWN module with the total memory", async () => {
    const root = await mkdtemp(join(tmpdir(), "machined-nodmi-"));
    try {
      await mkdir(join(root, "etc"));
      await mkdir(join(root, "proc"));
      await writeFile(join(root, "etc/machine-id"), "3d1219c7c4c5404aaa1f6d2a48adfda4\n");
      await writeFile(join(root, "proc/meminfo"), "MemTotal:        8155012 kB\nMemFree:         1000 kB\n");
      const s = new InMemoryState();
      startRuntime(s, [systemInfoController({ root })]);
      await eventually(() => !!spec(s, HARDWARE_NS, MemoryModuleType.type, "UNKNOWN"), 2000, "memory");
      expect(spec(s, HARDWARE_NS, SystemInformationType.type, "systeminformation")).toEqual({ uuid: "3d1219c7-c4c5-404a-aa1f-6d2a48adfda4" });
      expect(spec(s, HARDWARE_NS, MemoryModuleType.type, "UNKNOWN")).toEqual({ sizeMiB: 7963, manufacturer: "UNKNOWN" });
      expect(s.list(HARDWARE_NS, ProcessorType.type)).toEqual([]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
