/**
 * Static pod manifests of the control plane components, shaped like the pods Talos renders (the
 * YAML spec of a StaticPod resource is this manifest): host network, read-only root, the component's
 * secrets/config folders as hostPath volumes, tmpfs-backed /tmp and /var/run/kubernetes, probes.
 */
import type { MachineConfig } from "../config/index.js";
import {
  DEFAULT_KUBERNETES_VERSION,
  KUBE_APISERVER_IMAGE,
  KUBE_CONTROLLER_MANAGER_IMAGE,
  KUBE_SCHEDULER_IMAGE,
} from "../generate/constants.js";
import type { PodManifest } from "../resources/types/k8s.js";
import {
  APISERVER_CONFIG,
  APISERVER_SECRETS,
  AUDIT_LOG_DIR,
  CONTROLLER_MANAGER_SECRETS,
  SCHEDULER_CONFIG,
  SCHEDULER_SECRETS,
  apiServerArgs,
  controllerManagerArgs,
  schedulerArgs,
} from "./control-plane-args.js";

export const APISERVER_ID = "kube-apiserver";
export const CONTROLLER_MANAGER_ID = "kube-controller-manager";
export const SCHEDULER_ID = "kube-scheduler";

/** Versions stamped into the pod annotations, so a change of config or secrets restarts the pod. */
export interface PodVersions {
  secrets: string;
  config: string;
  configFile?: string;
}

interface ComponentSection {
  image?: string;
  extraVolumes?: { hostPath: string; mountPath: string; readonly?: boolean }[];
  env?: Record<string, string>;
  resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
}

interface PodShape {
  name: string;
  image: string;
  command: string[];
  section: ComponentSection;
  defaults: { cpu: string; memory: string };
  mounts: { name: string; mountPath: string; readOnly: boolean; hostPath: string }[];
  probes: Record<string, unknown>;
  runAs: number;
  capabilities: Record<string, string[]>;
  annotations: Record<string, string>;
}

export function apiServerPod(cfg: MachineConfig, v: PodVersions): PodManifest {
  return pod({
    name: APISERVER_ID,
    image: cfg.cluster?.apiServer?.image || `${KUBE_APISERVER_IMAGE}:v${DEFAULT_KUBERNETES_VERSION}`,
    command: apiServerArgs(cfg),
    section: cfg.cluster?.apiServer ?? {},
    defaults: { cpu: "200m", memory: "512Mi" },
    mounts: [
      { name: "secrets", mountPath: APISERVER_SECRETS, readOnly: true, hostPath: APISERVER_SECRETS },
      { name: "config", mountPath: APISERVER_CONFIG, readOnly: true, hostPath: APISERVER_CONFIG },
      { name: "audit", mountPath: AUDIT_LOG_DIR, readOnly: false, hostPath: AUDIT_LOG_DIR },
    ],
    // Startup probes are opt-in upstream; the API server is probed by the kubelet's own readiness logic.
    probes: {},
    runAs: 65534,
    capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] },
    annotations: {
      "talos.dev/secrets-version": v.secrets,
      "talos.dev/config-file-version": v.configFile ?? v.config,
      "talos.dev/config-version": v.config,
    },
  });
}

export function controllerManagerPod(cfg: MachineConfig, v: PodVersions): PodManifest {
  const probe = httpsProbe("/healthz", 10257);
  return pod({
    name: CONTROLLER_MANAGER_ID,
    image: cfg.cluster?.controllerManager?.image || `${KUBE_CONTROLLER_MANAGER_IMAGE}:v${DEFAULT_KUBERNETES_VERSION}`,
    command: controllerManagerArgs(cfg),
    section: cfg.cluster?.controllerManager ?? {},
    defaults: { cpu: "50m", memory: "256Mi" },
    mounts: [{ name: "secrets", mountPath: CONTROLLER_MANAGER_SECRETS, readOnly: true, hostPath: CONTROLLER_MANAGER_SECRETS }],
    probes: {
      startupProbe: { ...probe, periodSeconds: 5, failureThreshold: 12, timeoutSeconds: 15 },
      livenessProbe: { ...probe, timeoutSeconds: 15 },
    },
    runAs: 65535,
    capabilities: { drop: ["ALL"] },
    annotations: { "talos.dev/secrets-version": v.secrets, "talos.dev/config-version": v.config },
  });
}

export function schedulerPod(cfg: MachineConfig, v: PodVersions): PodManifest {
  return pod({
    name: SCHEDULER_ID,
    image: cfg.cluster?.scheduler?.image || `${KUBE_SCHEDULER_IMAGE}:v${DEFAULT_KUBERNETES_VERSION}`,
    command: schedulerArgs(cfg),
    section: cfg.cluster?.scheduler ?? {},
    defaults: { cpu: "10m", memory: "64Mi" },
    mounts: [
      { name: "secrets", mountPath: SCHEDULER_SECRETS, readOnly: true, hostPath: SCHEDULER_SECRETS },
      { name: "config", mountPath: SCHEDULER_CONFIG, readOnly: true, hostPath: SCHEDULER_CONFIG },
    ],
    probes: {
      livenessProbe: { ...httpsProbe("/livez", 10259), timeoutSeconds: 15 },
      readinessProbe: { ...httpsProbe("/readyz", 10259), timeoutSeconds: 15 },
      startupProbe: { ...httpsProbe("/livez", 10259), periodSeconds: 5, failureThreshold: 12, timeoutSeconds: 15 },
    },
    runAs: 65536,
    capabilities: { drop: ["ALL"] },
    annotations: { "talos.dev/secrets-version": v.secrets, "talos.dev/config-version": v.config },
  });
}

function httpsProbe(path: string, port: number) {
  return { httpGet: { path, host: "localhost", port, scheme: "HTTPS" } };
}

/** `registry.k8s.io/kube-apiserver:v1.37.0` → `1.37.0` (what the version label carries). */
function imageVersion(image: string): string {
  const tag = image.includes("@") ? "" : (image.split("/").pop()?.split(":")[1] ?? "");
  return tag.replace(/^v/, "");
}

/** Extra volume names are derived from the mount path, as upstream does. */
function volumeName(mountPath: string): string {
  return mountPath.replace(/[/_.]/g, "-").replace(/^-+|-+$/g, "");
}

function pod(p: PodShape): PodManifest {
  const extra = (p.section.extraVolumes ?? []).map((v) => ({
    name: volumeName(v.mountPath),
    mountPath: v.mountPath,
    readOnly: v.readonly ?? false,
    hostPath: v.hostPath,
  }));
  const requests = { cpu: String(p.section.resources?.requests?.cpu ?? p.defaults.cpu), memory: String(p.section.resources?.requests?.memory ?? p.defaults.memory) };
  const limits = Object.fromEntries(
    ["cpu", "memory"].filter((k) => p.section.resources?.limits?.[k] !== undefined).map((k) => [k, String(p.section.resources!.limits![k])]),
  );
  const env = [
    { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
    ...Object.keys(p.section.env ?? {})
      .sort()
      .map((name) => ({ name, value: p.section.env![name] })),
  ];
  const writable = [
    { name: "tmp", mountPath: "/tmp" },
    { name: "run", mountPath: "/var/run/kubernetes" },
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
        "app.kubernetes.io/version": imageVersion(p.image),
        "app.kubernetes.io/component": "control-plane",
        "app.kubernetes.io/managed-by": "Talos",
      },
      creationTimestamp: null,
    },
    spec: {
      priority: 2000000000,
      priorityClassName: "system-cluster-critical",
      containers: [
        {
          name: p.name,
          image: p.image,
          command: p.command,
          env,
          volumeMounts: [
            ...p.mounts.map((m) => ({ name: m.name, mountPath: m.mountPath, ...(m.readOnly ? { readOnly: true } : {}) })),
            ...writable,
            ...extra.map((m) => ({ name: m.name, mountPath: m.mountPath, ...(m.readOnly ? { readOnly: true } : {}) })),
          ],
          ...p.probes,
          resources: Object.keys(limits).length > 0 ? { requests, limits } : { requests },
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: p.capabilities,
            seccompProfile: { type: "RuntimeDefault" },
          },
        },
      ],
      hostNetwork: true,
      securityContext: { runAsNonRoot: true, runAsUser: p.runAs, runAsGroup: p.runAs },
      volumes: [
        ...p.mounts.map((m) => ({ name: m.name, hostPath: { path: m.hostPath } })),
        ...writable.map((w) => ({ name: w.name, emptyDir: { medium: "Memory" } })),
        ...extra.map((m) => ({ name: m.name, hostPath: { path: m.hostPath } })),
      ],
    },
    status: {},
  };
}

