/**
 * The KubeletConfiguration document (kubelet.config.k8s.io/v1beta1) Talos hands the kubelet, as the
 * plain map published in KubeletSpec.config. User `extraConfig` is the starting point; the fields the
 * agent must control are refused, and unset fields get Talos's defaults.
 */
import type { MachineTypeName } from "../resources/types/config.js";
import type { KubeletConfigSpec } from "../resources/types/k8s.js";
import { LABEL_CONTROL_PLANE } from "../generate/constants.js";

/** Fields extraConfig may not set (upstream kubelet.ProtectedConfigurationFields). */
export const PROTECTED_FIELDS = [
  "apiVersion",
  "authentication",
  "authorization",
  "cgroupRoot",
  "kind",
  "kubeletCgroups",
  "port",
  "protectKernelDefaults",
  "resolvConf",
  "rotateCertificates",
  "systemCgroups",
  "staticPodPath",
  "seccompDefault",
];

export interface KubeletConfigurationOptions {
  /** Container mode cannot protect kernel defaults (the host owns the sysctls). */
  container?: boolean;
  /**
   * What the host needs beyond upstream's settings: on a cgroup v1 host the kubelet refuses to start unless told
   * `failCgroupV1: false`; a local-mode sandbox shares the host's cgroup tree, so its kubelet lives under a folder
   * of its own instead of `/`; and where the node's resolv.conf is.
   */
  host?: { cgroupV1?: boolean; cgroupParent?: string; resolvConf?: string };
}

export function kubeletConfiguration(
  spec: KubeletConfigSpec,
  machineType: MachineTypeName,
  opts: KubeletConfigurationOptions = {},
): Record<string, unknown> {
  const extra = spec.extraConfig ?? {};
  const refused = PROTECTED_FIELDS.filter((f) => f in extra);
  if (refused.length > 0) throw new Error(refused.map((f) => `field ${JSON.stringify(f)} can't be overridden`).join("; "));

  const c: Record<string, unknown> = structuredClone(extra);
  const unset = (k: string) => c[k] === undefined || c[k] === "" || (Array.isArray(c[k]) && (c[k] as unknown[]).length === 0);
  c.apiVersion = "kubelet.config.k8s.io/v1beta1";
  c.kind = "KubeletConfiguration";
  if (!spec.disableManifestsDirectory) c.staticPodPath = "/etc/kubernetes/manifests";
  if (spec.staticPodListURL) c.staticPodURL = spec.staticPodListURL;
  c.port = 10250;
  c.authentication = {
    x509: { clientCAFile: "/etc/kubernetes/pki/ca.crt" },
    webhook: { enabled: !spec.skipNodeRegistration },
    anonymous: { enabled: false },
  };
  c.authorization = { mode: spec.skipNodeRegistration ? "AlwaysAllow" : "Webhook" };
  const parent = (opts.host?.cgroupParent ?? "").replace(/\/+$/, "");
  c.cgroupRoot = parent || "/";
  // systemCgroups makes the kubelet move every process of the root cgroup there: on a machine that is the node's
  // own system processes (upstream), but a sandbox shares the host's tree and must not capture the host's.
  if (!parent) c.systemCgroups = "/system";
  c.kubeletCgroups = `${parent}/podruntime/kubelet`;
  if (opts.host?.cgroupV1) c.failCgroupV1 = false;
  c.rotateCertificates = true;
  c.protectKernelDefaults = !opts.container;
  c.containerRuntimeEndpoint = "unix:///run/containerd/containerd.sock";
  if (spec.defaultRuntimeSeccompEnabled) c.seccompDefault = true;
  if (spec.enableFSQuotaMonitoring) {
    const gates = (c.featureGates ?? {}) as Record<string, boolean>;
    gates.LocalStorageCapacityIsolationFSQuotaMonitoring ??= true;
    c.featureGates = gates;
  }
  if (!spec.skipNodeRegistration && !spec.extraArgs["register-with-taints"]) {
    const taints = [...((c.registerWithTaints as { key: string; value?: string; effect?: string }[] | undefined) ?? [])];
    for (const [key, raw] of Object.entries(spec.registerWithTaints ?? {})) {
      if (taints.some((t) => t.key === key)) continue;
      // Taint text is `value:Effect` or just `Effect`.
      const colon = raw.lastIndexOf(":");
      const taint = colon < 0 ? { key, effect: raw } : { key, value: raw.slice(0, colon), effect: raw.slice(colon + 1) };
      taints.push(taint);
    }
    // Upstream: a control plane registers already tainted, so nothing is scheduled there in the moment before the
    // node's taints are applied (unless scheduling on control planes is allowed).
    const cp = machineType === "controlplane" || machineType === "init";
    if (cp && !spec.allowSchedulingOnControlPlane && !taints.some((t) => t.key === LABEL_CONTROL_PLANE)) {
      taints.push({ key: LABEL_CONTROL_PLANE, effect: "NoSchedule" });
    }
    taints.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    if (taints.length > 0) c.registerWithTaints = taints;
  }
  if (unset("address")) c.address = "0.0.0.0";
  c.oomScoreAdj ??= -450;
  if (unset("clusterDomain")) c.clusterDomain = spec.clusterDomain;
  if (unset("clusterDNS")) c.clusterDNS = [...spec.clusterDNS];
  c.serializeImagePulls ??= false;
  c.failSwapOn ??= false;
  if (!c.systemReserved || Object.keys(c.systemReserved as object).length === 0) {
    c.systemReserved = {
      cpu: "50m",
      pid: "100",
      "ephemeral-storage": "256Mi",
      memory: machineType === "controlplane" || machineType === "init" ? "512Mi" : "384Mi",
    };
  }
  const logging = (c.logging ?? {}) as Record<string, unknown>;
  if (!logging.format) logging.format = "json";
  c.logging = logging;
  if (unset("shutdownGracePeriod")) c.shutdownGracePeriod = "30s";
  if (unset("shutdownGracePeriodCriticalPods")) c.shutdownGracePeriodCriticalPods = "10s";
  if (unset("streamingConnectionIdleTimeout")) c.streamingConnectionIdleTimeout = "5m0s";
  if (unset("tlsMinVersion")) c.tlsMinVersion = "VersionTLS13";
  c.resolvConf = opts.host?.resolvConf ?? "/system/resolved/resolv.conf";
  return c;
}
