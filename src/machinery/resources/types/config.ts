/** Resources of the `config` namespace: the machine config itself and the machine type derived from it. */
import { create, toBinary } from "@bufbuild/protobuf";
import { stringify } from "yaml";
import { MachineConfigSpecSchema, MachineTypeSpecSchema, MachineType } from "../../api/gen/resource/config/config_pb.js";
import type { ResourceType } from "../resource.js";

export const CONFIG_NS = "config";

/** Spec: the config document text. yaml_spec is that text as a YAML string scalar (Talos ≥ 1.12 format). */
export const MachineConfigType: ResourceType<string> = {
  type: "MachineConfigs.config.talos.dev",
  defaultNamespace: CONFIG_NS,
  sensitive: true,
  toYaml: (text) => stringify(text, { lineWidth: 0, blockQuote: "literal" }),
  toProto: (text) => toBinary(MachineConfigSpecSchema, create(MachineConfigSpecSchema, { yamlMarshalled: new TextEncoder().encode(text) })),
};

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
