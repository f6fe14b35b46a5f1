/**
 * Block volumes of the `runtime` namespace: DiscoveredVolumes (every block device and partition with what a probe
 * finds on it: filesystem, labels, UUIDs), the SystemDisk (`system-disk`, where Talos is installed) and
 * VolumeConfigs (sensitive: how each system volume is provisioned and mounted).
 */
import { DiscoveredVolumeSpecSchema, SystemDiskSpecSchema, VolumeConfigSpecSchema } from "../../api/gen/resource/definitions/block/block_pb.js";
import type { ResourceType } from "../resource.js";
import { defineType } from "./define.js";
import { omitEmpty } from "./k8s.js";
import { specToYaml } from "../yaml.js";
import { specToProto } from "../protoenc.js";

const NS = "runtime";

export interface DiscoveredVolumeSpec {
  dev_path: string;
  /** `disk` or `partition`. */
  type: string;
  device_path: string;
  parent?: string;
  parent_dev_path?: string;
  offset: number;
  size: number;
  pretty_size: string;
  sector_size?: number;
  io_size?: number;
  /** What the probe found (`xfs`, `ext4`, `vfat`, `swap`, `luks`, `iso9660`, `squashfs`, `gpt`, `talosmeta`); "" for nothing. */
  name: string;
  uuid?: string;
  label?: string;
  block_size?: number;
  filesystem_block_size?: number;
  probed_size?: number;
  partition_uuid?: string;
  partition_type?: string;
  partition_label?: string;
  partition_index?: number;
}

const DV_KEYS: (keyof DiscoveredVolumeSpec)[] = [
  "dev_path", "type", "device_path", "parent", "parent_dev_path", "offset", "size", "pretty_size", "sector_size", "io_size", "name", "uuid", "label",
  "block_size", "filesystem_block_size", "probed_size", "partition_uuid", "partition_type", "partition_label", "partition_index",
];

export const DiscoveredVolumeType = defineType<DiscoveredVolumeSpec>({
  type: "DiscoveredVolumes.block.talos.dev",
  namespace: NS,
  printColumns: [
    { name: "Type", jsonPath: "{.type}" },
    { name: "Size", jsonPath: "{.pretty_size}" },
    { name: "Discovered", jsonPath: "{.name}" },
    { name: "Label", jsonPath: "{.label}" },
    { name: "PartitionLabel", jsonPath: "{.partition_label}" },
  ],
  schema: DiscoveredVolumeSpecSchema,
  keys: DV_KEYS,
  omitempty: [
    "parent", "parent_dev_path", "sector_size", "io_size", "uuid", "label", "block_size", "filesystem_block_size", "probed_size", "partition_uuid",
    "partition_type", "partition_label", "partition_index",
  ],
});

export interface SystemDiskSpec {
  diskID: string;
  devPath: string;
}

export const SystemDiskType = defineType<SystemDiskSpec>({
  type: "SystemDisks.block.talos.dev",
  namespace: NS,
  printColumns: [{ name: "Disk", jsonPath: "{.diskID}" }],
  schema: SystemDiskSpecSchema,
  keys: ["diskID", "devPath"],
});

export interface VolumeConfigSpec {
  parentId?: string;
  /** `partition`, `directory`, `tmpfs`, ... (block.VolumeType). */
  type: string;
  provisioning: {
    wave?: number;
    partitionSpec?: { minSize: number; maxSize?: number; relativeMaxSize: number; negativeMaxSize: boolean; grow: boolean; label?: string; typeUUID?: string };
    filesystemSpec?: { type: string; label?: string };
  };
  locator: { match?: string; diskMatch?: string };
  mount?: { targetPath: string; selinuxLabel: string; projectQuotaSupport: boolean; parentId?: string };
}

/** Go's struct order and omitempty at every level of the spec. */
function volumeConfigYaml(s: VolumeConfigSpec): unknown {
  const p = s.provisioning;
  return omitEmpty(
    {
      parentId: s.parentId,
      type: s.type,
      provisioning: omitEmpty(
        {
          wave: p.wave,
          partitionSpec: p.partitionSpec && omitEmpty({ ...p.partitionSpec }, ["maxSize", "label", "typeUUID"]),
          filesystemSpec: p.filesystemSpec && omitEmpty({ ...p.filesystemSpec }, ["label"]),
        },
        ["wave", "partitionSpec", "filesystemSpec"],
      ),
      locator: omitEmpty({ match: s.locator.match, diskMatch: s.locator.diskMatch }, ["match", "diskMatch"]),
      mount: s.mount && omitEmpty({ ...s.mount }, ["parentId"]),
    },
    ["parentId", "mount"],
  );
}

export const VolumeConfigType: ResourceType<VolumeConfigSpec> = {
  type: "VolumeConfigs.block.talos.dev",
  defaultNamespace: NS,
  printColumns: [],
  sensitive: true,
  toYaml: (s) => specToYaml(volumeConfigYaml(s)),
  // cel.Expression values are text in YAML and their source bytes on the wire.
  toProto: (s) =>
    specToProto(VolumeConfigSpecSchema, volumeConfigYaml(s), {
      fields: {
        "locator.match": { encode: (v) => new TextEncoder().encode(String(v)) },
        "locator.diskMatch": { field: "disk_match", encode: (v) => new TextEncoder().encode(String(v)) },
      },
    }),
};

export const VOLUMES_TYPES = [DiscoveredVolumeType, SystemDiskType, VolumeConfigType] as ResourceType[];
