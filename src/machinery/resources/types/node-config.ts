/**
 * Smaller config-derived and file resources: EtcFileStatus (`files`: one per etc file the node serves),
 * ImageCacheConfig (`cri`/`image-cache`), SiderolinkConfig (`config`/`siderolink`, sensitive: holds the join
 * token) and the bootstrap Manifests of the `controlplane` namespace.
 */
import { ImageCacheConfigSpecSchema } from "../../api/gen/resource/definitions/cri/cri_pb.js";
import { EtcFileStatusSpecSchema } from "../../api/gen/resource/definitions/files/files_pb.js";
import { ManifestSpecSchema } from "../../api/gen/resource/definitions/k8s/k8s_pb.js";
import { ConfigSpecSchema as SiderolinkConfigSpecSchema } from "../../api/gen/resource/definitions/siderolink/siderolink_pb.js";
import { specToProto } from "../protoenc.js";
import type { ResourceType } from "../resource.js";
import { specToYaml } from "../yaml.js";
import { defineType } from "./define.js";
import { sortKeysDeep } from "./k8s.js";

export const FILES_NS = "files";
export const CRI_NS = "cri";

export interface EtcFileStatusSpec {
  specVersion: string;
}

export const EtcFileStatusType = defineType<EtcFileStatusSpec>({
  type: "EtcFileStatuses.files.talos.dev",
  namespace: FILES_NS,
  printColumns: [],
  schema: EtcFileStatusSpecSchema,
  keys: ["specVersion"],
});

export interface ImageCacheConfigSpec {
  status: "unknown" | "disabled" | "preparing" | "ready";
  copyStatus: "unknown" | "skipped" | "copying" | "ready";
  roots: string[];
}

export const ImageCacheConfigType = defineType<ImageCacheConfigSpec>({
  type: "ImageCacheConfigs.cri.talos.dev",
  namespace: CRI_NS,
  printColumns: [
    { name: "Status", jsonPath: "{.status}" },
    { name: "CopyStatus", jsonPath: "{.copyStatus}" },
    { name: "Roots", jsonPath: "{.roots}" },
  ],
  schema: ImageCacheConfigSpecSchema,
  keys: ["status", "copyStatus", "roots"],
  // Go's enumer says "copying" where the proto says PENDING.
  proto: { enums: { "talos.resource.definitions.enums.CriImageCacheCopyStatus": { copying: 2 } } },
});

export interface SiderolinkConfigSpec {
  apiEndpoint: string;
  host: string;
  joinToken: string;
  insecure: boolean;
  tunnel: boolean;
}

export const SiderolinkConfigType = defineType<SiderolinkConfigSpec>({
  type: "SiderolinkConfigs.siderolink.talos.dev",
  namespace: "config",
  printColumns: [
    { name: "API Endpoint", jsonPath: "{.apiEndpoint}" },
    { name: "Tunnel", jsonPath: "{.tunnel}" },
  ],
  sensitive: true,
  schema: SiderolinkConfigSpecSchema,
  keys: ["apiEndpoint", "host", "joinToken", "insecure", "tunnel"],
});

export const NODE_CONFIG_TYPES = [EtcFileStatusType, ImageCacheConfigType, SiderolinkConfigType] as ResourceType[];

/** The namespaces these types add, with upstream's descriptions. */
export const EXTRA_NAMESPACES: [string, string][] = [
  [FILES_NS, "Files and file-like resources."],
  [CRI_NS, "CRI Seccomp resources."],
];
