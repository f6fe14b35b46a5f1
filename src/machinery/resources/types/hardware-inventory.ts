/**
 * Hardware inventory of the `hardware` namespace (upstream hardware.SystemInfoController and PCRStatus):
 * MemoryModules and Processors from SMBIOS, PCRStatuses (TPM PCRs a UKI boot extended; none without a TPM).
 */
import { MemoryModuleSpecSchema, ProcessorSpecSchema } from "../../api/gen/resource/definitions/hardware/hardware_pb.js";
import type { ResourceType } from "../resource.js";
import { defineType } from "./define.js";
import { HARDWARE_NS } from "./hardware.js";

export interface MemoryModuleSpec {
  sizeMiB?: number;
  deviceLocator?: string;
  bankLocator?: string;
  speed?: number;
  manufacturer?: string;
  serialNumber?: string;
  assetTag?: string;
  productName?: string;
}

const MEMORY_KEYS: (keyof MemoryModuleSpec)[] = ["sizeMiB", "deviceLocator", "bankLocator", "speed", "manufacturer", "serialNumber", "assetTag", "productName"];

export const MemoryModuleType = defineType<MemoryModuleSpec>({
  type: "MemoryModules.hardware.talos.dev",
  namespace: HARDWARE_NS,
  aliases: ["memorymodules", "ram"],
  printColumns: [
    { name: "Manufacturer", jsonPath: "{.manufacturer}" },
    { name: "Model", jsonPath: "{.productName}" },
    { name: "SizeMiB", jsonPath: "{.sizeMiB}" },
  ],
  schema: MemoryModuleSpecSchema,
  keys: MEMORY_KEYS,
  omitempty: MEMORY_KEYS,
  proto: { fields: { sizeMiB: "size" } },
});

export interface ProcessorSpec {
  socket?: string;
  manufacturer?: string;
  productName?: string;
  maxSpeedMhz?: number;
  bootSpeedMhz?: number;
  status?: number;
  serialNumber?: string;
  assetTag?: string;
  partNumber?: string;
  coreCount?: number;
  coreEnabled?: number;
  threadCount?: number;
}

const PROCESSOR_KEYS: (keyof ProcessorSpec)[] = [
  "socket", "manufacturer", "productName", "maxSpeedMhz", "bootSpeedMhz", "status", "serialNumber", "assetTag", "partNumber", "coreCount", "coreEnabled", "threadCount",
];

export const ProcessorType = defineType<ProcessorSpec>({
  type: "Processors.hardware.talos.dev",
  namespace: HARDWARE_NS,
  aliases: ["cpus", "cpu"],
  printColumns: [
    { name: "Manufacturer", jsonPath: "{.manufacturer}" },
    { name: "Model", jsonPath: "{.productName}" },
    { name: "Cores", jsonPath: "{.coreCount}" },
    { name: "Threads", jsonPath: "{.threadCount}" },
  ],
  schema: ProcessorSpecSchema,
  keys: PROCESSOR_KEYS,
  omitempty: PROCESSOR_KEYS,
  proto: { fields: { maxSpeedMhz: "max_speed", bootSpeedMhz: "boot_speed" } },
});

/** Empty spec: a PCRStatus only says that a PCR (the id) was extended as expected. */
export type PCRStatusSpec = Record<string, never>;

export const PCRStatusType = defineType<PCRStatusSpec>({
  type: "PCRStatuses.hardware.talos.dev",
  namespace: HARDWARE_NS,
  keys: [],
});

export const HARDWARE_INVENTORY_TYPES = [MemoryModuleType, ProcessorType, PCRStatusType] as ResourceType[];
