/**
 * The control plane component configs (namespace `controlplane`) derived from a control-plane machine config, as
 * upstream's k8s.ControlPlane*Controllers build them: images with their defaults, extra args/volumes/env, the
 * resources block (requests always name cpu and memory, empty meaning the component default), the etcd the API
 * server uses (its own node's, https://127.0.0.1:2379), and the admission, audit and authorization settings.
 */
import type { MachineConfig } from "../config/index.js";
import {
  DEFAULT_KUBERNETES_VERSION,
  KUBE_APISERVER_IMAGE,
  KUBE_CONTROLLER_MANAGER_IMAGE,
  KUBE_SCHEDULER_IMAGE,
} from "../generate/constants.js";
import type {
  AdmissionControlConfigSpec,
  APIServerConfigSpec,
  ArgValues,
  AuditPolicyConfigSpec,
  AuthorizationConfigSpec,
  AuthorizerSpec,
  ComponentResources,
  ControllerManagerConfigSpec,
  ExtraVolume,
  SchedulerConfigSpec,
} from "../resources/types/k8s-controlplane.js";
import { apiServerPort } from "./control-plane-args.js";
import { podCIDRs, serviceCIDRs } from "./network.js";
import { supportsAuthorizationConfigFile, versionFromImageRef } from "./version.js";

export const CLOUD_PROVIDER_EXTERNAL = "external";
/** The API server talks to the etcd member of its own node only. */
export const LOCAL_ETCD_SERVER = "https://127.0.0.1:2379";

/** The audit policy when cluster.apiServer.auditPolicy is empty: everything at Metadata level. */
export const DEFAULT_AUDIT_POLICY: Record<string, unknown> = {
  apiVersion: "audit.k8s.io/v1",
  kind: "Policy",
  rules: [{ level: "Metadata" }],
};

/** The authorizers when cluster.apiServer.authorizationConfig is empty. */
export const DEFAULT_AUTHORIZERS: AuthorizerSpec[] = [
  { type: "Node", name: "node", webhook: {} },
  { type: "RBAC", name: "rbac", webhook: {} },
];

type Cluster = NonNullable<MachineConfig["cluster"]>;
type Component = { extraArgs?: Record<string, string | string[]>; extraVolumes?: { hostPath: string; mountPath: string; readonly?: boolean }[]; env?: Record<string, string>; resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> } };

export function apiServerImage(cfg: MachineConfig): string {
  return cfg.cluster?.apiServer?.image || `${KUBE_APISERVER_IMAGE}:v${DEFAULT_KUBERNETES_VERSION}`;
}

export function apiServerConfigSpec(cfg: MachineConfig): APIServerConfigSpec {
  const c = cfg.cluster ?? ({} as Cluster);
  const s = c.apiServer ?? {};
  return {
    image: apiServerImage(cfg),
    cloudProvider: c.externalCloudProvider?.enabled ? CLOUD_PROVIDER_EXTERNAL : "",
    controlPlaneEndpoint: cfg.endpoint() ?? "",
    etcdServers: [LOCAL_ETCD_SERVER],
    localPort: apiServerPort(cfg),
    serviceCIDR: serviceCIDRs(cfg),
    extraArgs: argValues(s.extraArgs),
    extraVolumes: extraVolumes(s.extraVolumes),
    environmentVariables: { ...(s.env ?? {}) },
    advertisedAddress: cfg.machine?.kubelet?.skipNodeRegistration ? "" : "$(POD_IP)",
    resources: componentResources(s.resources),
  };
}

export function controllerManagerConfigSpec(cfg: MachineConfig): ControllerManagerConfigSpec {
  const c = cfg.cluster ?? ({} as Cluster);
  const s: Component = c.controllerManager ?? {};
  return {
    enabled: !cfg.machine?.controlPlane?.controllerManager?.disabled,
    image: c.controllerManager?.image || `${KUBE_CONTROLLER_MANAGER_IMAGE}:v${DEFAULT_KUBERNETES_VERSION}`,
    cloudProvider: c.externalCloudProvider?.enabled ? CLOUD_PROVIDER_EXTERNAL : "",
    podCIDRs: podCIDRs(cfg),
    serviceCIDRs: serviceCIDRs(cfg),
    extraArgs: argValues(s.extraArgs),
    extraVolumes: extraVolumes(s.extraVolumes),
    environmentVariables: { ...(s.env ?? {}) },
    resources: componentResources(s.resources),
  };
}

export function schedulerConfigSpec(cfg: MachineConfig): SchedulerConfigSpec {
  const s = cfg.cluster?.scheduler ?? {};
  return {
    enabled: !cfg.machine?.controlPlane?.scheduler?.disabled,
    image: s.image || `${KUBE_SCHEDULER_IMAGE}:v${DEFAULT_KUBERNETES_VERSION}`,
    extraArgs: argValues(s.extraArgs),
    extraVolumes: extraVolumes(s.extraVolumes),
    environmentVariables: { ...(s.env ?? {}) },
    resources: componentResources(s.resources),
    config: structuredClone(s.config ?? {}) as Record<string, unknown>,
  };
}

export function admissionControlConfigSpec(cfg: MachineConfig): AdmissionControlConfigSpec {
  return {
    config: (cfg.cluster?.apiServer?.admissionControl ?? []).map((p) => ({
      name: p.name ?? "",
      configuration: structuredClone(p.configuration ?? {}) as Record<string, unknown>,
    })),
  };
}

export function auditPolicyConfigSpec(cfg: MachineConfig): AuditPolicyConfigSpec {
  const policy = cfg.cluster?.apiServer?.auditPolicy;
  return { config: structuredClone(policy && Object.keys(policy).length > 0 ? policy : DEFAULT_AUDIT_POLICY) as Record<string, unknown> };
}

/** Node and RBAC are always there (first and second unless the user placed them); none at all before 1.29. */
export function authorizationConfigSpec(cfg: MachineConfig): AuthorizationConfigSpec {
  const image = apiServerImage(cfg);
  if (!supportsAuthorizationConfigFile(versionFromImageRef(image))) return { image, config: [] };
  const user = cfg.cluster?.apiServer?.authorizationConfig;
  if (!user) return { image, config: structuredClone(DEFAULT_AUTHORIZERS) };
  const authorizers: AuthorizerSpec[] = user.map((a) => ({
    type: a.type ?? "",
    name: a.name ?? "",
    webhook: structuredClone(a.webhook ?? {}) as Record<string, unknown>,
  }));
  if (!authorizers.some((a) => a.type === "Node")) authorizers.splice(0, 0, { type: "Node", name: "node", webhook: {} });
  if (!authorizers.some((a) => a.type === "RBAC")) authorizers.splice(1, 0, { type: "RBAC", name: "rbac", webhook: {} });
  return { image, config: authorizers };
}

function argValues(raw: Record<string, string | string[]> | undefined): Record<string, ArgValues> {
  const out: Record<string, ArgValues> = {};
  for (const [k, v] of Object.entries(raw ?? {})) out[k] = { values: Array.isArray(v) ? [...v] : [v] };
  return out;
}

/** Volume names come from the mount path, as upstream names them (`/var/lib/x` → `var-lib-x`). */
export function extraVolumes(list: Component["extraVolumes"]): ExtraVolume[] {
  return (list ?? []).map((v) => ({
    name: v.mountPath.replace(/[/_.]/g, "-").replace(/^-+|-+$/g, ""),
    hostPath: v.hostPath,
    mountPath: v.mountPath,
    readonly: v.readonly ?? false,
  }));
}

/** Integers and strings are taken as quantities, anything else is ignored (upstream's convertResource). */
function resourceValue(block: Record<string, unknown> | undefined, key: string): string {
  const v = block?.[key];
  if (typeof v === "number" && Number.isInteger(v)) return String(v);
  return typeof v === "string" ? v : "";
}

export function componentResources(r: Component["resources"]): ComponentResources {
  const limits: Record<string, string> = {};
  for (const key of ["cpu", "memory"]) {
    const v = resourceValue(r?.limits, key);
    if (v !== "") limits[key] = v;
  }
  return { requests: { cpu: resourceValue(r?.requests, "cpu"), memory: resourceValue(r?.requests, "memory") }, limits };
}
