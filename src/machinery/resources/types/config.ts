/**
 * Resources of the `config` namespace: the machine config itself and the machine type derived from it.
 *
 * The MachineConfig resource carries the parsed config (an immutable MachineConfig, shared by every reader), so
 * the document is parsed once, when it is accepted; `talosctl get machineconfig -o yaml` still shows the stored
 * text, byte for byte. Everything below the API reads the config through `machineConfig()`.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { stringify } from "yaml";
import { MachineConfigSpecSchema, MachineTypeSpecSchema, MachineType } from "../../api/gen/resource/config/config_pb.js";
import type { MachineConfig } from "../../config/machineconfig.js";
import type { Pointer, ResourceType } from "../resource.js";
import { readSpec, type ResourceReader } from "../read.js";

export const CONFIG_NS = "config";
/** The id of the active config (upstream's v1alpha1 / ActiveID). */
export const MACHINE_CONFIG_ID = "v1alpha1";
export const MACHINE_TYPE_ID = "machine-type";

/** yaml_spec is the document text as a YAML string scalar (Talos ≥ 1.12 format). */
export const MachineConfigType: ResourceType<MachineConfig> = {
  type: "MachineConfigs.config.talos.dev",
  defaultNamespace: CONFIG_NS,
  sensitive: true,
  toYaml: (cfg) => stringify(cfg.toString(), { lineWidth: 0, blockQuote: "literal" }),
  toProto: (cfg) => toBinary(MachineConfigSpecSchema, create(MachineConfigSpecSchema, { yamlMarshalled: cfg.encode() })),
};

export const machineConfigPtr: Pointer = { namespace: CONFIG_NS, type: MachineConfigType.type, id: MACHINE_CONFIG_ID };

/** The active machine config, or undefined in maintenance mode. */
export function machineConfig(r: Pick<ResourceReader, "get">): MachineConfig | undefined {
  return readSpec(r, MachineConfigType, MACHINE_CONFIG_ID);
}

/** The annotation talosctl uses to recognise the string-scalar yaml_spec format. */
export const YAML_SPEC_ANNOTATION = "talos.dev/yaml-spec";

export type MachineTypeName = "unknown" | "init" | "controlplane" | "worker";

const machineTypeEnum: Record<MachineTypeName, MachineType> = {
  unknown: MachineType.UNKNOWN,
  init: MachineType.INIT,
  controlplane: MachineType.CONTROL_PLANE,
  worker: MachineType.WORKER,
};

/** Spec: a bare scalar (hence the print column `{@}`). */
export const MachineTypeType: ResourceType<MachineTypeName> = {
  type: "MachineTypes.config.talos.dev",
  defaultNamespace: CONFIG_NS,
  printColumns: [{ name: "Type", jsonPath: "{@}" }],
  toYaml: (t) => `${t}\n`,
  toProto: (t) => toBinary(MachineTypeSpecSchema, create(MachineTypeSpecSchema, { machineType: machineTypeEnum[t] })),
};

export const machineTypePtr: Pointer = { namespace: CONFIG_NS, type: MachineTypeType.type, id: MACHINE_TYPE_ID };

/** The MachineType resource's value, or undefined when not published yet. */
export function machineType(r: Pick<ResourceReader, "get">): MachineTypeName | undefined {
  return readSpec(r, MachineTypeType, MACHINE_TYPE_ID);
}

export function isControlPlane(t: MachineTypeName | undefined): boolean {
  return t === "controlplane" || t === "init";
}

/** Weak inputs on the active config and the machine type, for controllers derived from them. */
export const machineConfigInput = { ...machineConfigPtr, kind: "weak" as const };
export const machineTypeInput = { ...machineTypePtr, kind: "weak" as const };
