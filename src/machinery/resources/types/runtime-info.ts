/**
 * Node facts of the `runtime` namespace: KernelCmdline (`cmdline`), PlatformMetadata (`platformmetadata`),
 * SBOMItems (the software the node runs) and WatchdogTimerStatus (`timer`, while a hardware watchdog is armed).
 */
import {
  KernelCmdlineSpecSchema,
  PlatformMetadataSpecSchema,
  SBOMItemSpecSchema,
  WatchdogTimerStatusSpecSchema,
} from "../../api/gen/resource/definitions/runtime/runtime_pb.js";
import type { ResourceType } from "../resource.js";
import { defineType } from "./define.js";
import { sortKeysDeep } from "./k8s.js";
import { RUNTIME_NS } from "./runtime.js";

export interface KernelCmdlineSpec {
  cmdline: string;
}

export const KernelCmdlineType = defineType<KernelCmdlineSpec>({
  type: "KernelCmdlines.runtime.talos.dev",
  namespace: RUNTIME_NS,
  aliases: ["cmdline"],
  printColumns: [{ name: "Cmdline", jsonPath: "{.cmdline}" }],
  schema: KernelCmdlineSpecSchema,
  keys: ["cmdline"],
});

export interface PlatformMetadataSpec {
  platform?: string;
  hostname?: string;
  region?: string;
  zone?: string;
  instanceType?: string;
  instanceId?: string;
  providerId?: string;
  spot?: boolean;
  internalDNS?: string;
  externalDNS?: string;
  tags?: Record<string, string>;
}

const PLATFORM_KEYS: (keyof PlatformMetadataSpec)[] = [
  "platform", "hostname", "region", "zone", "instanceType", "instanceId", "providerId", "spot", "internalDNS", "externalDNS", "tags",
];

const platformBase = defineType<PlatformMetadataSpec>({
  type: "PlatformMetadatas.talos.dev",
  namespace: RUNTIME_NS,
  printColumns: [
    { name: "Platform", jsonPath: "{.platform}" },
    { name: "Type", jsonPath: "{.instanceType}" },
    { name: "Region", jsonPath: "{.region}" },
    { name: "Zone", jsonPath: "{.zone}" },
  ],
  schema: PlatformMetadataSpecSchema,
  keys: PLATFORM_KEYS,
  omitempty: PLATFORM_KEYS,
  proto: { fields: { instanceId: "instance_id", providerId: "provider_id", internalDNS: "internal_dns", externalDNS: "external_dns" } },
});

/** Go prints the tags map with sorted keys. */
export const PlatformMetadataType: ResourceType<PlatformMetadataSpec> = {
  ...platformBase,
  toYaml: (s) => platformBase.toYaml!(s.tags ? { ...s, tags: sortKeysDeep(s.tags) as Record<string, string> } : s),
};

export interface SBOMItemSpec {
  name: string;
  version: string;
  license?: string;
  cpes?: string[];
  purls?: string[];
  extension?: boolean;
}

export const SBOMItemType = defineType<SBOMItemSpec>({
  type: "SBOMItems.talos.dev",
  namespace: RUNTIME_NS,
  aliases: ["sbom", "sboms"],
  printColumns: [
    { name: "Version", jsonPath: "{.version}" },
    { name: "License", jsonPath: "{.license}" },
    { name: "Extension", jsonPath: "{.extension}" },
  ],
  schema: SBOMItemSpecSchema,
  keys: ["name", "version", "license", "cpes", "purls", "extension"],
  omitempty: ["license", "cpes", "purls", "extension"],
  proto: { fields: { cpes: "cp_es", purls: "pur_ls" } },
});

export interface WatchdogTimerStatusSpec {
  device: string;
  /** Go durations as text, e.g. `1m0s`. */
  timeout: string;
  feedInterval: string;
}

export const WatchdogTimerStatusType = defineType<WatchdogTimerStatusSpec>({
  type: "WatchdogTimerStatuses.runtime.talos.dev",
  namespace: RUNTIME_NS,
  printColumns: [
    { name: "Device", jsonPath: "{.device}" },
    { name: "Timeout", jsonPath: "{.timeout}" },
  ],
  schema: WatchdogTimerStatusSpecSchema,
  keys: ["device", "timeout", "feedInterval"],
});

export const RUNTIME_INFO_TYPES = [KernelCmdlineType, PlatformMetadataType, SBOMItemType, WatchdogTimerStatusType] as ResourceType[];
