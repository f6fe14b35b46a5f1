/**
 * The bootstrap manifests of the `controlplane` namespace (`*.kubernetes.talos.dev`): what the manifests are
 * rendered from (BootstrapManifestsConfig, ExtraManifestsConfig), the rendered Kubernetes objects (Manifests, one
 * resource per upstream manifest id such as `00-kubelet-bootstrapping-token`) and what was applied (ManifestStatus).
 * `talosctl upgrade-k8s` reads the Manifests resources and applies them itself, so their objects must be exactly
 * upstream's.
 */
import {
  BootstrapManifestsConfigSpecSchema,
  ExtraManifestsConfigSpecSchema,
  ManifestSpecSchema,
  ManifestStatusSpecSchema,
} from "../../api/gen/resource/definitions/k8s/k8s_pb.js";
import { specToProto } from "../protoenc.js";
import type { ResourceType } from "../resource.js";
import { specToYaml } from "../yaml.js";
import { sortKeysDeep } from "./k8s.js";

/** Upstream's ControlPlaneNamespaceName. */
export { CONTROLPLANE_NS } from "./k8s-controlplane.js";
import { CONTROLPLANE_NS } from "./k8s-controlplane.js";

export const BOOTSTRAP_MANIFESTS_CONFIG_ID = "manifests";
export const EXTRA_MANIFESTS_CONFIG_ID = "extra-manifests";
export const MANIFEST_STATUS_ID = "manifests";

export interface BootstrapManifestsConfigSpec {
  /** The API server the in-cluster kubeconfig (kube-proxy) points at: KubePrism when enabled, else the cluster endpoint. */
  server: string;
  clusterDomain: string;
  podCIDRs: string[];
  proxyEnabled: boolean;
  proxyImage: string;
  proxyArgs: string[];
  coreDNSEnabled: boolean;
  coreDNSImage: string;
  dnsServiceIP: string;
  dnsServiceIPv6: string;
  flannelEnabled: boolean;
  flannelImage: string;
  flannelExtraArgs: string[];
  flannelKubeServiceHost: string;
  flannelKubeServicePort: string;
  flannelKubeNetworkPoliciesEnabled: boolean;
  flannelKubeNetworkPoliciesImage: string;
  podSecurityPolicyEnabled: boolean;
  talosAPIServiceEnabled: boolean;
  cniName: string;
}

export const BootstrapManifestsConfigType: ResourceType<BootstrapManifestsConfigSpec> = {
  type: "BootstrapManifestsConfigs.kubernetes.talos.dev",
  defaultNamespace: CONTROLPLANE_NS,
  // Upstream's struct tags the server field `yaml:"string"`, so that is the key talosctl prints.
  toYaml: (s) =>
    specToYaml({
      string: s.server,
      clusterDomain: s.clusterDomain,
      podCIDRs: s.podCIDRs,
      proxyEnabled: s.proxyEnabled,
      proxyImage: s.proxyImage,
      proxyArgs: s.proxyArgs,
      coreDNSEnabled: s.coreDNSEnabled,
      coreDNSImage: s.coreDNSImage,
      dnsServiceIP: s.dnsServiceIP,
      dnsServiceIPv6: s.dnsServiceIPv6,
      flannelEnabled: s.flannelEnabled,
      flannelImage: s.flannelImage,
      flannelExtraArgs: s.flannelExtraArgs,
      flannelKubeServiceHost: s.flannelKubeServiceHost,
      flannelKubeServicePort: s.flannelKubeServicePort,
      flannelKubeNetworkPoliciesEnabled: s.flannelKubeNetworkPoliciesEnabled,
      flannelKubeNetworkPoliciesImage: s.flannelKubeNetworkPoliciesImage,
      podSecurityPolicyEnabled: s.podSecurityPolicyEnabled,
      talosAPIServiceEnabled: s.talosAPIServiceEnabled,
      cniName: s.cniName,
    }),
  toProto: (s) => specToProto(BootstrapManifestsConfigSpecSchema, s),
};

export interface ExtraManifest {
  name: string;
  url: string;
  /** Sorts the manifest among the bootstrap ones: its id is `<priority>-<name>`. */
  priority: string;
  extraHeaders: Record<string, string>;
  inlineManifest: string;
}

export interface ExtraManifestsConfigSpec {
  extraManifests: ExtraManifest[];
}

export const ExtraManifestsConfigType: ResourceType<ExtraManifestsConfigSpec> = {
  type: "ExtraManifestsConfigs.kubernetes.talos.dev",
  defaultNamespace: CONTROLPLANE_NS,
  toYaml: (s) => specToYaml({ extraManifests: s.extraManifests.map((m) => ({ ...m, extraHeaders: sortKeysDeep(m.extraHeaders) })) }),
  toProto: (s) => specToProto(ExtraManifestsConfigSpecSchema, s),
};

/** One Kubernetes object in its unstructured (JSON) form. */
export type KubeObjectData = Record<string, unknown>;

export interface ManifestSpec {
  items: KubeObjectData[];
}

export const ManifestType: ResourceType<ManifestSpec> = {
  type: "Manifests.kubernetes.talos.dev",
  defaultNamespace: CONTROLPLANE_NS,
  // Upstream marshals the spec as the bare list of objects, each a Go map (so with sorted keys).
  toYaml: (s) => specToYaml(s.items.map(sortKeysDeep)),
  toProto: (s) => specToProto(ManifestSpecSchema, { items: s.items.map((object) => ({ object })) }),
};

export interface ManifestStatusSpec {
  manifestsApplied: string[];
}

export const ManifestStatusType: ResourceType<ManifestStatusSpec> = {
  type: "ManifestStatuses.kubernetes.talos.dev",
  defaultNamespace: CONTROLPLANE_NS,
  toProto: (s) => specToProto(ManifestStatusSpecSchema, s),
};

export const K8S_MANIFEST_TYPES: ResourceType[] = [
  BootstrapManifestsConfigType,
  ExtraManifestsConfigType,
  ManifestType,
  ManifestStatusType,
] as ResourceType[];
