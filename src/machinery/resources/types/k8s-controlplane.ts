/**
 * The Kubernetes control plane's resources (`*.kubernetes.talos.dev`, namespace `controlplane`): the per-component
 * configs derived from the machine config, the statuses of the files rendered for the static pods, and (namespace
 * `k8s`) where the static pod server listens. Field names and order follow upstream's YAML tags; Go prints nil
 * maps as `{}`, nil lists as `[]`, and map keys sorted.
 */
import {
  AdmissionControlConfigSpecSchema,
  APIServerConfigSpecSchema,
  AuditPolicyConfigSpecSchema,
  AuthorizationConfigSpecSchema,
  ConfigStatusSpecSchema,
  ControllerManagerConfigSpecSchema,
  SchedulerConfigSpecSchema,
  SecretsStatusSpecSchema,
  StaticPodServerStatusSpecSchema,
} from "../../api/gen/resource/definitions/k8s/k8s_pb.js";
import { specToProto } from "../protoenc.js";
import type { ResourceType } from "../resource.js";
import { specToYaml } from "../yaml.js";
import { K8S_NS, sortKeysDeep } from "./k8s.js";

export const CONTROLPLANE_NS = "controlplane";

export const APISERVER_ID = "kube-apiserver";
export const CONTROLLER_MANAGER_ID = "kube-controller-manager";
export const SCHEDULER_ID = "kube-scheduler";
export const ADMISSION_CONTROL_ID = "admission-control";
export const AUDIT_POLICY_ID = "audit-policy";
export const AUTHORIZATION_ID = "authorization";
/** SecretsStatus and ConfigStatus of the files rendered for the static pods. */
export const STATIC_PODS_STATUS_ID = "static-pods";
export const STATIC_POD_SERVER_STATUS_ID = "static-pod-server-status";

export interface ArgValues {
  values: string[];
}

export interface ExtraVolume {
  name: string;
  hostPath: string;
  mountPath: string;
  readonly: boolean;
}

/** Requests always carry cpu and memory (empty = the component's default); limits only what the user set. */
export interface ComponentResources {
  requests: Record<string, string>;
  limits: Record<string, string>;
}

export interface APIServerConfigSpec {
  image: string;
  cloudProvider: string;
  controlPlaneEndpoint: string;
  etcdServers: string[];
  localPort: number;
  serviceCIDR: string[];
  extraArgs: Record<string, ArgValues>;
  extraVolumes: ExtraVolume[];
  environmentVariables: Record<string, string>;
  /** `$(POD_IP)`, or empty when the node does not register (no advertise address then). */
  advertisedAddress: string;
  resources: ComponentResources;
}

export interface ControllerManagerConfigSpec {
  enabled: boolean;
  image: string;
  cloudProvider: string;
  podCIDRs: string[];
  serviceCIDRs: string[];
  extraArgs: Record<string, ArgValues>;
  extraVolumes: ExtraVolume[];
  environmentVariables: Record<string, string>;
  resources: ComponentResources;
}

export interface SchedulerConfigSpec {
  enabled: boolean;
  image: string;
  extraArgs: Record<string, ArgValues>;
  extraVolumes: ExtraVolume[];
  environmentVariables: Record<string, string>;
  resources: ComponentResources;
  /** cluster.scheduler.config: the user's KubeSchedulerConfiguration fields. */
  config: Record<string, unknown>;
}

export interface AdmissionPluginSpec {
  name: string;
  configuration: Record<string, unknown>;
}

export interface AdmissionControlConfigSpec {
  config: AdmissionPluginSpec[];
}

export interface AuditPolicyConfigSpec {
  config: Record<string, unknown>;
}

export interface AuthorizerSpec {
  type: string;
  name: string;
  webhook: Record<string, unknown>;
}

export interface AuthorizationConfigSpec {
  image: string;
  /** Empty when the API server image is too old for an authorization config file. */
  config: AuthorizerSpec[];
}

/** SecretStatuses / ConfigStatuses `static-pods`: the files are written; `version` goes into the pod annotations. */
export interface RenderStatusSpec {
  ready: boolean;
  version: string;
}

export interface StaticPodServerStatusSpec {
  url: string;
}

const sorted = <T>(v: T): T => sortKeysDeep(v) as T;

const volumes = (v: ExtraVolume[]) => v.map((x) => ({ name: x.name, hostPath: x.hostPath, mountPath: x.mountPath, readonly: x.readonly }));
const resources = (r: ComponentResources) => ({ requests: sorted(r.requests), limits: sorted(r.limits) });

export const APIServerConfigType: ResourceType<APIServerConfigSpec> = {
  type: "APIServerConfigs.kubernetes.talos.dev",
  defaultNamespace: CONTROLPLANE_NS,
  sensitive: true,
  toYaml: (s) =>
    specToYaml({
      image: s.image,
      cloudProvider: s.cloudProvider,
      controlPlaneEndpoint: s.controlPlaneEndpoint,
      etcdServers: s.etcdServers,
      localPort: s.localPort,
      serviceCIDR: s.serviceCIDR,
      extraArgs: sorted(s.extraArgs),
      extraVolumes: volumes(s.extraVolumes),
      environmentVariables: sorted(s.environmentVariables),
      advertisedAddress: s.advertisedAddress,
      resources: resources(s.resources),
    }),
  toProto: (s) => specToProto(APIServerConfigSpecSchema, s, { fields: { serviceCIDR: "service_cid_rs" } }),
};

export const ControllerManagerConfigType: ResourceType<ControllerManagerConfigSpec> = {
  type: "ControllerManagerConfigs.kubernetes.talos.dev",
  defaultNamespace: CONTROLPLANE_NS,
  toYaml: (s) =>
    specToYaml({
      enabled: s.enabled,
      image: s.image,
      cloudProvider: s.cloudProvider,
      podCIDRs: s.podCIDRs,
      serviceCIDRs: s.serviceCIDRs,
      extraArgs: sorted(s.extraArgs),
      extraVolumes: volumes(s.extraVolumes),
      environmentVariables: sorted(s.environmentVariables),
      resources: resources(s.resources),
    }),
  toProto: (s) => specToProto(ControllerManagerConfigSpecSchema, s),
};

export const SchedulerConfigType: ResourceType<SchedulerConfigSpec> = {
  type: "SchedulerConfigs.kubernetes.talos.dev",
  defaultNamespace: CONTROLPLANE_NS,
  toYaml: (s) =>
    specToYaml({
      enabled: s.enabled,
      image: s.image,
      extraArgs: sorted(s.extraArgs),
      extraVolumes: volumes(s.extraVolumes),
      environmentVariables: sorted(s.environmentVariables),
      resources: resources(s.resources),
      config: sorted(s.config),
    }),
  toProto: (s) => specToProto(SchedulerConfigSpecSchema, s),
};

export const AdmissionControlConfigType: ResourceType<AdmissionControlConfigSpec> = {
  type: "AdmissionControlConfigs.kubernetes.talos.dev",
  defaultNamespace: CONTROLPLANE_NS,
  toYaml: (s) => specToYaml({ config: s.config.map((p) => ({ name: p.name, configuration: sorted(p.configuration) })) }),
  toProto: (s) => specToProto(AdmissionControlConfigSpecSchema, s),
};

export const AuditPolicyConfigType: ResourceType<AuditPolicyConfigSpec> = {
  type: "AuditPolicyConfigs.kubernetes.talos.dev",
  defaultNamespace: CONTROLPLANE_NS,
  sensitive: true,
  toYaml: (s) => specToYaml({ config: sorted(s.config) }),
  toProto: (s) => specToProto(AuditPolicyConfigSpecSchema, s),
};

export const AuthorizationConfigType: ResourceType<AuthorizationConfigSpec> = {
  type: "AuthorizationConfigs.kubernetes.talos.dev",
  defaultNamespace: CONTROLPLANE_NS,
  sensitive: true,
  toYaml: (s) => specToYaml({ image: s.image, config: s.config.map((a) => ({ type: a.type, name: a.name, webhook: sorted(a.webhook) })) }),
  toProto: (s) => specToProto(AuthorizationConfigSpecSchema, s),
};

const statusColumns = [
  { name: "Ready", jsonPath: "{.ready}" },
  { name: "Secrets Version", jsonPath: "{.version}" },
];

export const SecretsStatusType: ResourceType<RenderStatusSpec> = {
  type: "SecretStatuses.kubernetes.talos.dev",
  defaultNamespace: CONTROLPLANE_NS,
  printColumns: statusColumns,
  toProto: (s) => specToProto(SecretsStatusSpecSchema, s),
};

export const ConfigStatusType: ResourceType<RenderStatusSpec> = {
  type: "ConfigStatuses.kubernetes.talos.dev",
  defaultNamespace: CONTROLPLANE_NS,
  printColumns: statusColumns,
  toProto: (s) => specToProto(ConfigStatusSpecSchema, s),
};

export const StaticPodServerStatusType: ResourceType<StaticPodServerStatusSpec> = {
  type: "StaticPodServerStatuses.kubernetes.talos.dev",
  defaultNamespace: K8S_NS,
  toProto: (s) => specToProto(StaticPodServerStatusSpecSchema, s),
};

export const K8S_CONTROLPLANE_TYPES: ResourceType[] = [
  APIServerConfigType,
  ControllerManagerConfigType,
  SchedulerConfigType,
  AdmissionControlConfigType,
  AuditPolicyConfigType,
  AuthorizationConfigType,
  SecretsStatusType,
  ConfigStatusType,
  StaticPodServerStatusType,
] as ResourceType[];
