/**
 * hardware.SystemInfoController: SystemInformation (`hardware`/`systeminformation`) from the DMI
 * attributes the kernel exports under /sys/class/dmi/id (Talos parses SMBIOS; sysfs carries the same
 * strings except the wake-up type). Serial and UUID are root-only files: unreadable ones stay empty.
 */
import { hostFiles, type Files } from "../../host/files/index.js";
import * as path from "node:path";
import { HARDWARE_NS, SystemInformationType, type SystemInformationSpec } from "../../machinery/resources/types/hardware.js";
import type { Controller } from "../../state/runtime/index.js";

export interface SystemInfoOptions {
  /** Filesystem root holding `sys/`; default "/". */
  root?: string;
  files?: Files;
}

const FILES: [keyof SystemInformationSpec, string][] = [
  ["manufacturer", "sys_vendor"],
  ["productName", "product_name"],
  ["version", "product_version"],
  ["biosVersion", "bios_version"],
  ["serialnumber", "product_serial"],
  ["uuid", "product_uuid"],
  ["skuNumber", "product_sku"],
];

export async function readSystemInformation(root = "/", files: Files = hostFiles): Promise<SystemInformationSpec> {
  const spec: SystemInformationSpec = {};
  for (const [key, file] of FILES) {
    const v = await files.readFile(path.join(root, "sys/class/dmi/id", file), "utf8").then(
      (t) => t.trim(),
      () => "",
    );
    if (v !== "") spec[key] = v;
  }
  return spec;
}

export function systemInfoController(opts: SystemInfoOptions = {}): Controller {
  return {
    name: "hardware.SystemInfoController",
    inputs: [],
    outputs: [{ type: SystemInformationType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const spec = await readSystemInformation(opts.root, opts.files);
      ctx.apply({ namespace: HARDWARE_NS, type: SystemInformationType.type, id: "systeminformation", spec });
    },
  };
}
