/** hardware.SystemInfoController reads DMI attributes from an injectable root. */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HARDWARE_NS, SystemInformationType } from "../../../src/machinery/resources/types/hardware.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { systemInfoController } from "../../../src/controllers/hardware/system-info.js";
import { eventually, spec, startRuntime } from "../runtime/harness.js";

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
});
