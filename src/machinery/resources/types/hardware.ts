/** SystemInformations.hardware.talos.dev (id `systeminformation`): SMBIOS system facts (§3.1 row 29). */
import { SystemInformationSpecSchema } from "../../api/gen/resource/definitions/hardware/hardware_pb.js";
import { specToProto } from "../protoenc.js";
import type { ResourceType } from "../resource.js";
import { specToYaml } from "../yaml.js";
import { omitEmpty } from "./k8s.js";

export const HARDWARE_NS = "hardware";

/** Every field is omitempty in Go, so unknown values simply do not appear. */
export interface SystemInformationSpec {
  manufacturer?: string;
  productName?: string;
  version?: string;
  biosVersion?: string;
  serialnumber?: string;
  uuid?: string;
  wakeUpType?: string;
  skuNumber?: string;
}

const KEYS: (keyof SystemInformationSpec)[] = [
  "manufacturer",
  "productName",
  "version",
  "biosVersion",
  "serialnumber",
  "uuid",
  "wakeUpType",
  "skuNumber",
];

export const SystemInformationType: ResourceType<SystemInformationSpec> = {
  type: "SystemInformations.hardware.talos.dev",
  defaultNamespace: HARDWARE_NS,
  aliases: ["systeminformation"],
  printColumns: [
    { name: "Manufacturer", jsonPath: "{.manufacturer}" },
    { name: "ProductName", jsonPath: "{.productName}" },
    { name: "Version", jsonPath: "{.version}" },
    { name: "SerialNumber", jsonPath: "{.serialnumber}" },
    { name: "UUID", jsonPath: "{.uuid}" },
    { name: "WakeUpType", jsonPath: "{.wakeUpType}" },
    { name: "SKUNumber", jsonPath: "{.skuNumber}" },
  ],
  // Go struct order, empty values dropped (omitempty).
  toYaml: (s) => specToYaml(omitEmpty(Object.fromEntries(KEYS.map((k) => [k, s[k]])) as SystemInformationSpec, KEYS)),
  toProto: (s) => specToProto(SystemInformationSpecSchema, omitEmpty(s, KEYS)),
};

export const HARDWARE_TYPES: ResourceType[] = [SystemInformationType] as ResourceType[];
