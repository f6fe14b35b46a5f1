/**
 * Static pod manifests of the control plane components, shaped as upstream's ControlPlaneStaticPodController
 * renders them (a v1.Pod as JSON, so empty fields are absent): host network, non-root with the component's uid,
 * all capabilities dropped, RuntimeDefault seccomp, the component's secrets/config folders as hostPath volumes,
 * probes, resources with defaults, GOMEMLIMIT from a memory limit, and the version annotations that make the
 * kubelet restart a pod whose secrets or config changed.
 */
import { APISERVER_CONFIG, APISERVER_SECRETS, AUDIT_LOG_DIR, CONTROLLER_MANAGER_SECRETS, SCHEDULER_CONFIG, SCHEDULER_SECRETS } from "../paths.js";
import type { PodManifest } from "../resources/types/k8s.js";
import {
  APISERVER_ID,
  CONTROLLER_MANAGER_ID,
  SCHEDULER_ID,
  type APIServerConfigSpec,
  type ComponentResources,
  type ControllerManagerConfigSpec,
  type ExtraVolume,
  type SchedulerConfigSpec,
} from "../resources/types/k8s-controlplane.js";
import { apiServerArgs, controllerManagerArgs, schedulerArgs } from "./control-plane-args.js";
import { quantityValue } from "./quantity.js";
import { schedulerHealthEndpoints, versionFromImageRef, versionString } from "./version.js";

export { APISERVER_ID, CONTROLLER_MANAGER_ID, SCHEDULER_ID };

/** The uid (and gid) each component runs as; its secrets are owned by it (KubernetesAPIServerRunUser etc.). */
export const APISERVER_UID = 65534;
export const CONTROLLER_MANAGER_UID = 65535;
export const SCHEDULER_UID = 65536;

export const ANNOTATION_SECRETS_VERSION = "talos.dev/secrets-version";
export const ANNOTATION_CONFIG_VERSION = "talos.dev/config-version";
export const ANNOTATION_CONFIG_FILE_VERSION = "talos.dev/config-file-version";

/** scheduling.SystemCriticalPriority */
const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;
/** GOMEMLIMIT is this share of the memory limit, leaving the Go runtime headroom before the OOM killer. */
const GOMEMLIMIT_PERCENT = 95;

/** What the pod annotations carry: the SecretsStatus version, the component config's version, the ConfigStatus version. */
export interface PodVersions {
  secrets: string;
  config: string;
  configFile: string;
}

interface Mount {
  name: string;
  path: string;
  readOnly: boolean;
}

interface PodShape {
  name: string;
  image: string;
  command: string[];
  env: Record<string, string>;
  resources: ComponentResources;
  defaults: { cpu: string; memory: string };
  mounts: Mount[];
  extraVolumes: ExtraVolume[];
  probes: Record<string, unknown>;
  uid: number;
  capabilities: { add?: string[]; drop: string[] };
  annotations: Record<string, string>;
}

export function apiServerPod(spec: APIServerConfigSpec, v: PodVersions): PodManifest {
  return pod({
    name: APISERVER_ID,
    image: spec.image,
    command: apiServerArgs(spec),
    env: spec.environmentVariables,
    resources: spec.resources,
    defaults: { cpu: "200m", memory: "512Mi" },
    mounts: [
      { name: "secrets", path: APISERVER_SECRETS, readOnly: true },
      { name: "config", path: APISERVER_CONFIG, readOnly: true },
      { name: "audit", path: AUDIT_LOG_DIR, readOnly: false },
    ],
    extraVolumes: spec.extraVolumes,
    probes: {},
    uid: APISERVER_UID,
    // The kube-apiserver binary carries cap_net_bind_service=+ep, which makes the capability a hard requirement.
    capabilities: { add: ["NET_BIND_SERVICE"], drop: ["ALL"] },
    annotations: {
      [ANNOTATION_SECRETS_VERSION]: v.secrets,
      [ANNOTATION_CONFIG_FILE_VERSION]: v.configFile,
      [ANNOTATION_CONFIG_VERSION]: v.config,
    },
  });
}

export function controllerManagerPod(spec: ControllerManagerConfigSpec, v: PodVersions): PodManifest {
  const get = httpsGet("/healthz", 10257);
  return pod({
    name: CONTROLLER_MANAGER_ID,
    image: spec.image,
    command: controllerManagerArgs(spec),
    env: spec.environmentVariables,
    resources: spec.resources,
    defaults: { cpu: "50m", memory: "256Mi" },
    mounts: [{ name: "secrets", path: CONTROLLER_MANAGER_SECRETS, readOnly: true }],
    extraVolumes: spec.extraVolumes,
    probes: {
      // 60 s to come up, each probe given 15 s (Talos 1.14's budget).
      startupProbe: { httpGet: get, periodSeconds: 5, failureThreshold: 12, timeoutSeconds: 15 },
      livenessProbe: { httpGet: get, timeoutSeconds: 15 },
    },
    uid: CONTROLLER_MANAGER_UID,
    capabilities: { drop: ["ALL"] },
    annotations: { [ANNOTATION_SECRETS_VERSION]: v.secrets, [ANNOTATION_CONFIG_VERSION]: v.config },
  });
}

export function schedulerPod(spec: SchedulerConfigSpec, v: PodVersions): PodManifest {
  const endpoints = schedulerHealthEndpoints(versionFromImageRef(spec.image));
  return pod({
    name: SCHEDULER_ID,
    image: spec.image,
    command: schedulerArgs(spec),
    env: spec.environmentVariables,
    resources: spec.resources,
    defaults: { cpu: "10m", memory: "64Mi" },
    mounts: [
      { name: "secrets", path: SCHEDULER_SECRETS, readOnly: true },
      { name: "config", path: SCHEDULER_CONFIG, readOnly: true },
    ],
    extraVolumes: spec.extraVolumes,
    probes: {
      // Talos 1.14's budget (1.13 left the Kubernetes defaults: 30 s to start, 1 s per probe, which a slow or
      // loaded machine misses: the scheduler was killed before it served /livez and never scheduled a pod).
      startupProbe: { httpGet: httpsGet(endpoints.startup, 10259), periodSeconds: 5, failureThreshold: 12, timeoutSeconds: 15 },
      livenessProbe: { httpGet: httpsGet(endpoints.liveness, 10259), timeoutSeconds: 15 },
      readinessProbe: { httpGet: httpsGet(endpoints.readiness, 10259), timeoutSeconds: 15 },
    },
    uid: SCHEDULER_UID,
    capabilities: { drop: ["ALL"] },
    annotations: { [ANNOTATION_SECRETS_VERSION]: v.secrets, [ANNOTATION_CONFIG_VERSION]: v.config },
  });
}

function httpsGet(path: string, port: number) {
  return { path, port, host: "localhost", scheme: "HTTPS" };
}

/** requests (defaults for what is unset) and limits, each checked as a quantity; the error names the value. */
function podResources(r: ComponentResources, defaults: { cpu: string; memory: string }): { limits?: Record<string, string>; requests: Record<string, string> } {
  const check = (value: string, what: string) => {
    try {
      quantityValue(value);
    } catch (err) {
      throw new Error(`error parsing ${what}: ${(err as Error).message}`);
    }
    return value;
  };
  const requests = {
    cpu: r.requests.cpu ? check(r.requests.cpu, "CPU request") : defaults.cpu,
    memory: r.requests.memory ? check(r.requests.memory, "memory request") : defaults.memory,
  };
  const limits: Record<string, string> = {};
  if (r.limits.cpu) limits.cpu = check(r.limits.cpu, "CPU limit");
  if (r.limits.memory) limits.memory = check(r.limits.memory, "memory limit");
  return Object.keys(limits).length > 0 ? { limits, requests } : { requests };
}

function pod(p: PodShape): PodManifest {
  const resources = podResources(p.resources, p.defaults);
  const env: Record<string, unknown>[] = [{ name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } }];
  // Kubernetes expands $(VAR) references in values; `$$` keeps a user's `$` literal.
  for (const name of Object.keys(p.env).sort()) env.push({ name, value: p.env[name].replaceAll("$", "$$$$") });
  const memoryLimit = resources.limits?.memory;
  if (memoryLimit) {
    const bytes = quantityValue(memoryLimit);
    if (bytes > 0) env.push({ name: "GOMEMLIMIT", value: String(Math.floor((bytes * GOMEMLIMIT_PERCENT) / 100)) });
  }
  const mounts = [
    ...p.mounts.map((m) => ({ name: m.name, mountPath: m.path, ...(m.readOnly ? { readOnly: true } : {}) })),
    ...p.extraVolumes.map((v) => ({ name: v.name, mountPath: v.mountPath, ...(v.readonly ? { readOnly: true } : {}) })),
  ];
  const volumes = [
    ...p.mounts.map((m) => ({ name: m.name, hostPath: { path: m.path } })),
    ...p.extraVolumes.map((v) => ({ name: v.name, hostPath: { path: v.hostPath } })),
  ];
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: p.name,
      namespace: "kube-system",
      annotations: p.annotations,
      labels: {
        tier: "control-plane",
        "k8s-app": p.name,
        component: p.name,
        "app.kubernetes.io/name": p.name,
        "app.kubernetes.io/version": versionString(versionFromImageRef(p.image)),
        "app.kubernetes.io/component": "control-plane",
        "app.kubernetes.io/managed-by": "Talos",
      },
    },
    spec: {
      priority: SYSTEM_CRITICAL_PRIORITY,
      priorityClassName: "system-cluster-critical",
      containers: [
        {
          name: p.name,
          image: p.image,
          command: p.command,
          env,
          volumeMounts: mounts,
          ...p.probes,
          resources,
          securityContext: {
            allowPrivilegeEscalation: false,
            capabilities: p.capabilities,
            seccompProfile: { type: "RuntimeDefault" },
          },
        },
      ],
      hostNetwork: true,
      securityContext: { runAsNonRoot: true, runAsUser: p.uid, runAsGroup: p.uid },
      volumes,
    },
    status: {},
  };
}
