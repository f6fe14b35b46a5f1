/**
 * Resources of the `cluster` namespace: cluster Info, the node Identity and cluster Members
 * (talos-resource-api.md §3.1 rows 1–3, §3.2). Also home of `registerCoreTypes`, which registers every
 * type the core controllers publish, so the wiring has one call to make.
 */
import {
  IdentitySpecSchema,
  InfoSpecSchema,
  MemberSpecSchema,
} from "../../api/gen/resource/definitions/cluster/cluster_pb.js";
import { specToProto } from "../protoenc.js";
import type { TypeRegistry } from "../registry.js";
import type { ResourceType } from "../resource.js";
import type { MachineTypeName } from "./config.js";
import { BLOCK_TYPES } from "./block.js";
import { ETCD_TYPES } from "./etcd.js";
import { HARDWARE_TYPES } from "./hardware.js";
import { K8S_TYPES } from "./k8s.js";
import { SECURITY_TYPES } from "./security.js";
import { TIME_TYPES } from "./time.js";

export const CLUSTER_NS = "cluster";

export interface InfoSpec {
  clusterId: string;
  clusterName: string;
}

export const InfoType: ResourceType<InfoSpec> = {
  type: "Infos.cluster.talos.dev",
  defaultNamespace: CLUSTER_NS,
  printColumns: [
    { name: "Cluster ID", jsonPath: "{.clusterId}" },
    { name: "Cluster Name", jsonPath: "{.clusterName}" },
  ],
  toProto: (s) => specToProto(InfoSpecSchema, s),
};

export interface IdentitySpec {
  nodeId: string;
}

export const IdentityType: ResourceType<IdentitySpec> = {
  type: "Identities.cluster.talos.dev",
  defaultNamespace: CLUSTER_NS,
  printColumns: [{ name: "ID", jsonPath: "{.nodeId}" }],
  toProto: (s) => specToProto(IdentitySpecSchema, s),
};

export interface MemberSpec {
  nodeId: string;
  /** IP addresses as text (Go netip.Addr renders as text in YAML). */
  addresses: string[];
  hostname: string;
  machineType: MachineTypeName;
  /** `<OS name> (<tag>)`, e.g. `Talos (v1.14.0)`. */
  operatingSystem: string;
  /** Present on control planes only (omitempty). */
  controlPlane?: { port: number };
}

export const MemberType: ResourceType<MemberSpec> = {
  type: "Members.cluster.talos.dev",
  defaultNamespace: CLUSTER_NS,
  printColumns: [
    { name: "Hostname", jsonPath: "{.hostname}" },
    { name: "Machine Type", jsonPath: "{.machineType}" },
    { name: "OS", jsonPath: "{.operatingSystem}" },
    { name: "Addresses", jsonPath: "{.addresses}" },
  ],
  // The Go field is APIServerPort with YAML key `port`; the proto names it api_server_port.
  toProto: (s) => specToProto(MemberSpecSchema, s, { fields: { "controlPlane.port": "api_server_port" } }),
};

export const CLUSTER_TYPES: ResourceType[] = [InfoType, IdentityType, MemberType] as ResourceType[];

/** Namespaces the core types live in, with the descriptions Talos registers. */
const CORE_NAMESPACES: [string, string][] = [
  ["runtime", "Talos runtime resources."],
  ["cluster", "Cluster configuration and discovery resources."],
  ["cluster-raw", "Cluster unmerged raw resources."],
  ["k8s", "Kubernetes all node types resources."],
  ["etcd", "etcd resources."],
  ["hardware", "Hardware resources."],
];

/**
 * Registers every resource type the core controllers (src/controllers/{runtime,cluster,k8s,etcd,block,
 * hardware,time}) publish, plus their namespaces when the registry does not know them yet.
 */
export function registerCoreTypes(registry: TypeRegistry): TypeRegistry {
  for (const [ns, description] of CORE_NAMESPACES) if (!registry.hasNamespace(ns)) registry.registerNamespace(ns, description);
  for (const t of [...CLUSTER_TYPES, ...K8S_TYPES, ...ETCD_TYPES, ...BLOCK_TYPES, ...HARDWARE_TYPES, ...SECURITY_TYPES, ...TIME_TYPES]) {
    registry.register(t);
  }
  return registry;
}
