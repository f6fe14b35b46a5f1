/** Resources of the `runtime` namespace published by the lifecycle layer: machine status and version. */
import { create, toBinary } from "@bufbuild/protobuf";
import { MachineStatusSpecSchema, VersionSpecSchema } from "../../api/gen/resource/definitions/runtime/runtime_pb.js";
import { ServiceSpecSchema } from "../../api/gen/resource/definitions/v1alpha1/v1alpha1_pb.js";
import type { ResourceType } from "../resource.js";

export const RUNTIME_NS = "runtime";

/** YAML names of the machine stages, in enum order (RuntimeMachineStage 0..8). */
export const STAGES = [
  "unknown",
  "booting",
  "installing",
  "maintenance",
  "running",
  "rebooting",
  "shutting down",
  "resetting",
  "upgrading",
] as const;
export type StageName = (typeof STAGES)[number];

export interface UnmetCondition {
  name: string;
  reason: string;
}

export interface MachineStatusSpec {
  stage: StageName;
  status: { ready: boolean; unmetConditions: UnmetCondition[] };
}

export const MachineStatusType: ResourceType<MachineStatusSpec> = {
  type: "MachineStatuses.runtime.talos.dev",
  defaultNamespace: RUNTIME_NS,
  printColumns: [
    { name: "Stage", jsonPath: "{.stage}" },
    { name: "Ready", jsonPath: "{.status.ready}" },
  ],
  toProto: (s) =>
    toBinary(
      MachineStatusSpecSchema,
      create(MachineStatusSpecSchema, {
        stage: STAGES.indexOf(s.stage),
        status: { ready: s.status.ready, unmetConditions: s.status.unmetConditions },
      }),
    ),
};

export interface VersionSpec {
  version: string;
  name: string;
}

export const VersionType: ResourceType<VersionSpec> = {
  type: "Versions.runtime.talos.dev",
  defaultNamespace: RUNTIME_NS,
  printColumns: [
    { name: "Name", jsonPath: "{.name}" },
    { name: "Version", jsonPath: "{.version}" },
  ],
  toProto: (s) => toBinary(VersionSpecSchema, create(VersionSpecSchema, s)),
};

export interface ServiceSpec {
  running: boolean;
  healthy: boolean;
  unknown: boolean;
}

export const ServiceType: ResourceType<ServiceSpec> = {
  type: "Services.v1alpha1.talos.dev",
  defaultNamespace: RUNTIME_NS,
  aliases: ["svc"],
  printColumns: [
    { name: "Running", jsonPath: "{.running}" },
    { name: "Healthy", jsonPath: "{.healthy}" },
    { name: "Health Unknown", jsonPath: "{.unknown}" },
  ],
  toProto: (s) => toBinary(ServiceSpecSchema, create(ServiceSpecSchema, s)),
};
