/**
 * hardware.SystemInfoController: SystemInformation (`hardware`/`systeminformation`), Processors and MemoryModules
 * from SMBIOS, as upstream.
 *
 * Sources, in order: the SMBIOS tables; for the system strings, the DMI attributes under /sys/class/dmi/id (the
 * same strings, for kernels that do not export the raw tables). The UUID is META's UUID override when set (as
 * upstream), else SMBIOS's; a host without SMBIOS (a container host, a Firecracker VM) has none, and then the
 * machine's /etc/machine-id stands in, so the node still has a stable, unique UUID. Without SMBIOS memory
 * devices, one module `UNKNOWN` carries the total memory from /proc/meminfo (upstream's fallback).
 */
import { hostFiles, type Files } from "../../host/files/index.js";
import * as path from "node:path";
import { readMachineIdUuid, readSmbios, type Smbios } from "../../host/smbios.js";
import { readMeminfo } from "../../host/proc/meminfo.js";
import { MetaKeyType } from "../../machinery/resources/types/block.js";
import { HARDWARE_NS, SystemInformationType, type SystemInformationSpec } from "../../machinery/resources/types/hardware.js";
import { MemoryModuleType, ProcessorType, type MemoryModuleSpec, type ProcessorSpec } from "../../machinery/resources/types/hardware-inventory.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import type { Controller } from "../../state/runtime/index.js";
import { readSpec } from "../../machinery/resources/read.js";
import { metaKeyId } from "../runtime/meta-keys.js";

export interface SystemInfoOptions {
  /** Filesystem root holding `sys/`, `proc/` and `etc/`; default "/". */
  root?: string;
  /** SMBIOS source; default the kernel's tables under `root`. */
  smbios?: () => Promise<Smbios | undefined>;
  files?: Files;
}

/** META tag of the UUID override (upstream meta.UUIDOverride). */
export const UUID_OVERRIDE_TAG = 0x0f;

const FILES: [keyof SystemInformationSpec, string][] = [
  ["manufacturer", "sys_vendor"],
  ["productName", "product_name"],
  ["version", "product_version"],
  ["biosVersion", "bios_version"],
  ["serialnumber", "product_serial"],
  ["uuid", "product_uuid"],
  ["skuNumber", "product_sku"],
];

async function readDmiId(root: string, files: Files): Promise<SystemInformationSpec> {
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

/** SystemInformation from SMBIOS (or the DMI attributes), without the UUID override and fallback. */
export async function readSystemInformation(root = "/", smbios?: Smbios, files: Files = hostFiles): Promise<SystemInformationSpec> {
  const sys = smbios?.system;
  if (!sys) return readDmiId(root, files);
  const spec: SystemInformationSpec = {
    manufacturer: sys.manufacturer,
    productName: sys.productName,
    version: sys.version,
    biosVersion: smbios.biosVersion,
    serialnumber: sys.serialNumber,
    uuid: sys.uuid,
    wakeUpType: sys.wakeUpType,
    skuNumber: sys.skuNumber,
  };
  for (const k of Object.keys(spec) as (keyof SystemInformationSpec)[]) if (!spec[k]) delete spec[k];
  return spec;
}

export function systemInfoController(opts: SystemInfoOptions = {}): Controller {
  const root = opts.root ?? "/";
  const files = opts.files ?? hostFiles;
  const smbiosSource = opts.smbios ?? (() => readSmbios(root, files));
  let smbios: Promise<Smbios | undefined> | undefined;
  return {
    name: "hardware.SystemInfoController",
    inputs: [{ namespace: RUNTIME_NS, type: MetaKeyType.type, id: metaKeyId(UUID_OVERRIDE_TAG), kind: "weak" }],
    outputs: [
      { type: SystemInformationType.type, kind: "exclusive" },
      { type: ProcessorType.type, kind: "exclusive" },
      { type: MemoryModuleType.type, kind: "exclusive" },
    ],
    async reconcile(ctx) {
      // The tables never change while the machine runs: read them once.
      smbios ??= smbiosSource().catch(() => undefined);
      const tables = await smbios;
      const spec = await readSystemInformation(root, tables, files);
      const override = readSpec(ctx, MetaKeyType, metaKeyId(UUID_OVERRIDE_TAG))?.value;
      if (override) spec.uuid = override;
      else if (!spec.uuid) {
        const fallback = await readMachineIdUuid(root, files);
        if (fallback) spec.uuid = fallback;
      }
      ctx.apply({ namespace: HARDWARE_NS, type: SystemInformationType.type, id: "systeminformation", spec });

      const processors: string[] = [];
      for (const p of tables?.processors ?? []) {
        // `CPU 0` → `CPU-0`, as upstream.
        const id = p.socketDesignation.replaceAll(" ", "-");
        const spec: ProcessorSpec = {
          socket: p.socketDesignation,
          manufacturer: p.manufacturer,
          productName: p.version,
          maxSpeedMhz: p.maxSpeedMhz,
          bootSpeedMhz: p.currentSpeedMhz,
          status: p.status,
          serialNumber: p.serialNumber,
          assetTag: p.assetTag,
          partNumber: p.partNumber,
          coreCount: p.coreCount,
          coreEnabled: p.coreEnabled,
          threadCount: p.threadCount,
        };
        ctx.apply({ namespace: HARDWARE_NS, type: ProcessorType.type, id, spec });
        processors.push(id);
      }
      ctx.cleanup(HARDWARE_NS, ProcessorType.type, processors);

      const modules: string[] = [];
      for (const m of tables?.memoryDevices ?? []) {
        // The locator alone is not always unique: suffix the bank, `DIMM 0` + `P0 CHANNEL A` → `DIMM-0-P0-CHANNEL-A`.
        const id = (m.bankLocator ? `${m.deviceLocator} ${m.bankLocator}` : m.deviceLocator).replaceAll(" ", "-");
        const spec: MemoryModuleSpec = {
          sizeMiB: m.sizeMiB,
          deviceLocator: m.deviceLocator,
          bankLocator: m.bankLocator,
          speed: m.speed,
          manufacturer: m.manufacturer,
          serialNumber: m.serialNumber,
          assetTag: m.assetTag,
          productName: m.partNumber,
        };
        ctx.apply({ namespace: HARDWARE_NS, type: MemoryModuleType.type, id, spec });
        modules.push(id);
      }
      if (modules.length === 0) {
        const mem = await readMeminfo({ root }).catch(() => undefined);
        const spec: MemoryModuleSpec = { sizeMiB: mem ? Number(mem.memtotal / 1024n) : 0, manufacturer: "UNKNOWN" };
        ctx.apply({ namespace: HARDWARE_NS, type: MemoryModuleType.type, id: "UNKNOWN", spec });
        modules.push("UNKNOWN");
      }
      ctx.cleanup(HARDWARE_NS, MemoryModuleType.type, modules);
    },
  };
}
