/**
 * Resources of the `k8s` namespace (`*.kubernetes.talos.dev`): Nodename, StaticPod(Status), Kubelet
 * config/spec/status (talos-resource-api.md §3.1 rows 4–8 and 34, §3.2).
 *
 * Go renders `map[string]any` fields with sorted keys, so every map-typed value goes through
 * `sortKeysDeep` before YAML rendering; struct-typed fields keep Go's struct order and omitempty rules.
 */
import {
  KubeletConfigSpecSchema,
  KubeletSpecSpecSchema,
  KubeletStatusSpecSchema,
  NodeStatusSpecSchema,
  NodenameSpecSchema,
  StaticPodSpecSchema,
  StaticPodStatusSpecSchema,
} from "../../api/gen/resource/definitions/k8s/k8s_pb.js";
import { specToProto } from "../protoenc.js";
import type { ResourceType } from "../resource.js";
import { specToYaml } from "../yaml.js";

export const K8S_NS = "k8s";

/** A plain nested map with every object's keys sorted, as Go's YAML encoder prints maps. */
export function sortKeysDeep(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeysDeep);
  if (typeof v !== "object" || v === null || v instanceof Date || v instanceof Uint8Array) return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).sort()) out[k] = sortKeysDeep((v as Record<string, unknown>)[k]);
  return out;
}

/** Drops the keys whose value Go's omitempty would drop (empty strings/lists/maps, false, 0, undefined). */
export function omitEmpty<T extends object>(o: T, keys: (keyof T)[]): T {
  const out = { ...o };
  for (const k of keys) {
    const v = out[k] as unknown;
    const empty =
      v === undefined ||
      v === null ||
      v === "" ||
      v === false ||
      v === 0 ||
      (Array.isArray(v) && v.length === 0) ||
      (typeof v === "object" && !Array.isArray(v) && Object.keys(v as object).length === 0);
    if (empty) delete out[k];
  }
  return out;
}

export interface NodenameSpec {
  nodename: string;
  hostnameVersion: string;
  skipNodeRegistration: boolean;
}

export const NodenameType: ResourceType<NodenameSpec> = {
  type: "Nodenames.kubernetes.talos.dev",
  defaultNamespace: K8S_NS,
  printColumns: [{ name: "Nodename", jsonPath: "{.nodename}" }],
  toProto: (s) => specToProto(NodenameSpecSchema, s),
};

/** A pod manifest as a plain object (apiVersion, kind, metadata, spec). */
export type PodManifest = Record<string, unknown>;

/** The spec IS the pod manifest: yaml_spec is the manifest, proto_spec wraps it in a Struct. */
export const StaticPodType: ResourceType<PodManifest> = {
  type: "StaticPods.kubernetes.talos.dev",
  defaultNamespace: K8S_NS,
  toYaml: (pod) => specToYaml(sortKeysDeep(pod)),
  toProto: (pod) => specToProto(StaticPodSpecSchema, { pod }),
};

/**
 * The spec IS the Kubernetes PodStatus object as the kubelet reported it; the fields machined reads are
 * named, every other field passes through untouched.
 */
export interface StaticPodStatusSpec {
  phase?: string;
  conditions?: { type?: string; status?: string }[];
  [field: string]: unknown;
}

export const StaticPodStatusType: ResourceType<StaticPodStatusSpec> = {
  type: "StaticPodStatuses.kubernetes.talos.dev",
  defaultNamespace: K8S_NS,
  aliases: ["podstatus"],
  printColumns: [{ name: "Ready", jsonPath: '{.conditions[?(@.type=="Ready")].status}' }],
  toYaml: (status) => specToYaml(sortKeysDeep(status)),
  toProto: (podStatus) => specToProto(StaticPodStatusSpecSchema, { podStatus }),
};

export interface IdMapping {
  containerid: number;
  hostid: number;
  size: number;
}

/**
 * An OCI runtime-spec mount. The Go struct only has JSON tags, so YAML keys are the lower-cased field
 * names (`uidmappings`), and its nil lists print as `[]`.
 */
export interface MountSpec {
  destination: string;
  type: string;
  source: string;
  options: string[];
  uidmappings: IdMapping[];
  gidmappings: IdMapping[];
}

export interface KubeletSpecSpec {
  image: string;
  args: string[];
  extraMounts: MountSpec[];
  expectedNodename: string;
  config: Record<string, unknown>;
  credentialProviderConfig?: Record<string, unknown>;
}

export const KubeletSpecType: ResourceType<KubeletSpecSpec> = {
  type: "KubeletSpecs.kubernetes.talos.dev",
  defaultNamespace: K8S_NS,
  sensitive: true,
  toYaml: (s) =>
    specToYaml(
      omitEmpty(
        {
          image: s.image,
          args: s.args,
          extraMounts: s.extraMounts,
          expectedNodename: s.expectedNodename,
          config: sortKeysDeep(s.config ?? {}) as Record<string, unknown>,
          credentialProviderConfig: sortKeysDeep(s.credentialProviderConfig) as Record<string, unknown> | undefined,
        },
        ["args", "extraMounts", "expectedNodename", "credentialProviderConfig"],
      ),
    ),
  toProto: (s) => specToProto(KubeletSpecSpecSchema, s),
};

export interface KubeletConfigSpec {
  image: string;
  clusterDNS: string[];
  clusterDomain: string;
  extraArgs: Record<string, { values: string[] }>;
  extraMounts: MountSpec[];
  extraConfig: Record<string, unknown>;
  cloudProviderExternal: boolean;
  defaultRuntimeSeccompEnabled: boolean;
  skipNodeRegistration: boolean;
  staticPodListURL: string;
  disableManifestsDirectory: boolean;
  enableFSQuotaMonitoring: boolean;
  credentialProviderConfig?: Record<string, unknown>;
  /** cluster.allowSchedulingOnControlPlanes: a control plane registers without its NoSchedule taint. */
  allowSchedulingOnControlPlane: boolean;
  registerWithTaints: Record<string, string>;
}

export const KubeletConfigType: ResourceType<KubeletConfigSpec> = {
  type: "KubeletConfigs.kubernetes.talos.dev",
  defaultNamespace: K8S_NS,
  sensitive: true,
  toYaml: (s) =>
    specToYaml(
      omitEmpty(
        {
          image: s.image,
          clusterDNS: s.clusterDNS,
          clusterDomain: s.clusterDomain,
          extraArgs: sortKeysDeep(s.extraArgs) as KubeletConfigSpec["extraArgs"],
          extraMounts: s.extraMounts,
          extraConfig: sortKeysDeep(s.extraConfig) as Record<string, unknown>,
          cloudProviderExternal: s.cloudProviderExternal,
          defaultRuntimeSeccompEnabled: s.defaultRuntimeSeccompEnabled,
          skipNodeRegistration: s.skipNodeRegistration,
          staticPodListURL: s.staticPodListURL,
          disableManifestsDirectory: s.disableManifestsDirectory,
          enableFSQuotaMonitoring: s.enableFSQuotaMonitoring,
          credentialProviderConfig: sortKeysDeep(s.credentialProviderConfig) as Record<string, unknown> | undefined,
          allowSchedulingOnControlPlane: s.allowSchedulingOnControlPlane,
          registerWithTaints: sortKeysDeep(s.registerWithTaints) as Record<string, string>,
        },
        ["extraArgs", "extraMounts", "extraConfig", "credentialProviderConfig", "registerWithTaints"],
      ),
    ),
  toProto: (s) => specToProto(KubeletConfigSpecSchema, s),
};

export interface KubeletStatusSpec {
  image: string;
}

export const KubeletStatusType: ResourceType<KubeletStatusSpec> = {
  type: "KubeletStatuses.kubernetes.talos.dev",
  defaultNamespace: K8S_NS,
  printColumns: [{ name: "Image", jsonPath: "{.image}" }],
  toProto: (s) => specToProto(KubeletStatusSpecSchema, s),
};

/** NodeStatuses `<nodename>`: the node's own Kubernetes Node object as this node sees it (readiness, labels, CIDRs). */
export interface NodeStatusSpec {
  nodename: string;
  nodeReady: boolean;
  unschedulable: boolean;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  podCIDRs: string[];
}

export const NodeStatusType: ResourceType<NodeStatusSpec> = {
  type: "NodeStatuses.kubernetes.talos.dev",
  defaultNamespace: K8S_NS,
  printColumns: [
    { name: "Ready", jsonPath: "{.nodeReady}" },
    { name: "Unschedulable", jsonPath: "{.unschedulable}" },
  ],
  toYaml: (s) => specToYaml({ ...s, labels: sortKeysDeep(s.labels), annotations: sortKeysDeep(s.annotations) }),
  toProto: (s) => specToProto(NodeStatusSpecSchema, s, { fields: { podCIDRs: "pod_cid_rs" } }),
};

export const K8S_TYPES: ResourceType[] = [
  NodenameType,
  StaticPodType,
  StaticPodStatusType,
  KubeletSpecType,
  KubeletConfigType,
  KubeletStatusType,
  NodeStatusType,
] as ResourceType[];
