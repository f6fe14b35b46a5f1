/**
 * Storage resources, all in the `runtime` namespace: Disks, VolumeStatuses, block MountStatuses, the
 * legacy runtime MountStatuses (`talosctl get mounts`) and MetaKeys (the META partition's tags).
 * talos-resource-api.md §3.1 rows 24–27 and 31, §3.2.
 */
import {
  DiskSpecSchema,
  MountStatusSpecSchema as BlockMountStatusSpecSchema,
  VolumeStatusSpecSchema,
} from "../../api/gen/resource/definitions/block/block_pb.js";
import {
  MetaKeySpecSchema,
  MountStatusSpecSchema as RuntimeMountStatusSpecSchema,
} from "../../api/gen/resource/definitions/runtime/runtime_pb.js";
import { specToProto } from "../protoenc.js";
import type { ResourceType } from "../resource.js";
import { specToYaml } from "../yaml.js";
import { omitEmpty } from "./k8s.js";

const NS = "runtime";

/** Disk spec; Go's YAML tags for disks are snake_case, so the spec keys are too. */
export interface DiskSpec {
  dev_path: string;
  size: number;
  pretty_size: string;
  io_size: number;
  sector_size: number;
  readonly: boolean;
  cdrom: boolean;
  model: string;
  firmware_version: string;
  serial: string;
  modalias: string;
  wwid: string;
  uuid: string;
  bus_path: string;
  sub_system: string;
  transport: string;
  rotational: boolean;
  secondary_disks: string[];
  symlinks: string[];
}

const DISK_OMITEMPTY: (keyof DiskSpec)[] = [
  "model",
  "firmware_version",
  "serial",
  "modalias",
  "wwid",
  "uuid",
  "bus_path",
  "sub_system",
  "transport",
  "rotational",
  "secondary_disks",
  "symlinks",
];

export const DiskType: ResourceType<DiskSpec> = {
  type: "Disks.block.talos.dev",
  defaultNamespace: NS,
  printColumns: [
    { name: "Size", jsonPath: "{.pretty_size}" },
    { name: "Read Only", jsonPath: "{.readonly}" },
    { name: "Transport", jsonPath: "{.transport}" },
    { name: "Rotational", jsonPath: "{.rotational}" },
    { name: "WWID", jsonPath: "{.wwid}" },
    { name: "Model", jsonPath: "{.model}" },
    { name: "Serial", jsonPath: "{.serial}" },
  ],
  toYaml: (s) => specToYaml(omitEmpty(s, DISK_OMITEMPTY)),
  toProto: (s) => specToProto(DiskSpecSchema, s),
};

export type VolumePhaseName = "waiting" | "failed" | "missing" | "located" | "provisioned" | "prepared" | "ready" | "closed";
export type VolumeTypeName = "partition" | "disk" | "tmpfs" | "directory" | "symlink" | "overlay" | "external";
export type FilesystemName = "none" | "xfs" | "vfat" | "ext4" | "iso9660" | "swap" | "virtiofs" | "btrfs";

export interface VolumeMountSpec {
  targetPath: string;
  selinuxLabel: string;
  projectQuotaSupport: boolean;
}

/** The subset of Talos's VolumeStatusSpec this agent can know, in Go's field order. */
export interface VolumeStatusSpec {
  phase: VolumePhaseName;
  /** `directory` for a plain folder (local mode), `partition` for a real partition. */
  type: VolumeTypeName;
  location?: string;
  mountLocation?: string;
  partitionIndex?: number;
  parentLocation?: string;
  uuid?: string;
  partitionUUID?: string;
  size?: number;
  prettySize?: string;
  filesystem?: FilesystemName;
  mountSpec?: VolumeMountSpec;
  errorMessage?: string;
}

const VOLUME_OMITEMPTY: (keyof VolumeStatusSpec)[] = [
  "location",
  "mountLocation",
  "partitionIndex",
  "parentLocation",
  "uuid",
  "partitionUUID",
  "size",
  "prettySize",
  "filesystem",
  "mountSpec",
  "errorMessage",
];

export const VolumeStatusType: ResourceType<VolumeStatusSpec> = {
  type: "VolumeStatuses.block.talos.dev",
  defaultNamespace: NS,
  printColumns: [
    { name: "Type", jsonPath: "{.type}" },
    { name: "Phase", jsonPath: "{.phase}" },
    { name: "Location", jsonPath: "{.location}" },
    { name: "Size", jsonPath: "{.prettySize}" },
  ],
  toYaml: (s) => specToYaml(omitEmpty({ ...s, filesystem: s.filesystem === "none" ? undefined : s.filesystem }, VOLUME_OMITEMPTY)),
  toProto: (s) => specToProto(VolumeStatusSpecSchema, s),
};

export interface MountRequestSpec {
  volumeID: string;
  parentID: string;
  readOnly: boolean;
  detached: boolean;
  requesters: string[];
  requesterIDs: string[];
}

export interface BlockMountStatusSpec {
  spec: MountRequestSpec;
  source: string;
  target: string;
  filesystem: FilesystemName;
  readOnly: boolean;
  projectQuotaSupport: boolean;
  detached: boolean;
}

export const BlockMountStatusType: ResourceType<BlockMountStatusSpec> = {
  type: "MountStatuses.block.talos.dev",
  defaultNamespace: NS,
  printColumns: [
    { name: "Source", jsonPath: "{.source}" },
    { name: "Target", jsonPath: "{.target}" },
    { name: "Filesystem", jsonPath: "{.filesystem}" },
    { name: "Volume", jsonPath: "{.spec.volumeID}" },
  ],
  toProto: (s) => specToProto(BlockMountStatusSpecSchema, s, { fields: { "spec.parentID": "parent_mount_id" } }),
};

export interface RuntimeMountStatusSpec {
  source: string;
  target: string;
  filesystemType: string;
  options: string[];
  encrypted: boolean;
  encryptionProviders?: string[];
}

/** The pre-volume-manager view; only the explicit alias `mounts` (no automatic aliases), as upstream. */
export const RuntimeMountStatusType: ResourceType<RuntimeMountStatusSpec> = {
  type: "MountStatuses.runtime.talos.dev",
  defaultNamespace: NS,
  aliases: ["mounts"],
  skipAutomaticAliases: true,
  printColumns: [
    { name: "Source", jsonPath: "{.source}" },
    { name: "Target", jsonPath: "{.target}" },
    { name: "Filesystem Type", jsonPath: "{.filesystemType}" },
  ],
  toYaml: (s) => specToYaml(omitEmpty(s, ["encryptionProviders"])),
  toProto: (s) => specToProto(RuntimeMountStatusSpecSchema, s),
};

export interface MetaKeySpec {
  value: string;
}

/** One META tag; the id is the tag as two-digit hex (`0x0a`). */
export const MetaKeyType: ResourceType<MetaKeySpec> = {
  type: "MetaKeys.runtime.talos.dev",
  defaultNamespace: NS,
  aliases: ["meta"],
  printColumns: [{ name: "Value", jsonPath: "{.value}" }],
  toProto: (s) => specToProto(MetaKeySpecSchema, s),
};

export const BLOCK_TYPES: ResourceType[] = [
  DiskType,
  VolumeStatusType,
  BlockMountStatusType,
  RuntimeMountStatusType,
  MetaKeyType,
] as ResourceType[];
