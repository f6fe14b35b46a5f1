/**
 * k8s.KubeletConfigController: the kubelet settings of the machine config (machine.kubelet, node
 * taints, cluster DNS) as the KubeletConfig resource `k8s`/`kubelet`. Only published when this node
 * runs a kubelet: `talosctl health` skips its kubelet check exactly when this resource is missing.
 * Like upstream it waits for the static pod server (StaticPodServerStatuses `static-pod-server-status`), whose URL
 * becomes the kubelet's staticPodURL: until then nothing is published (an existing config is kept).
 */
import type { MachineConfig } from "../../machinery/config/index.js";
import { KUBELET_IMAGE, DEFAULT_KUBERNETES_VERSION } from "../../machinery/generate/constants.js";
import { K8S_NS, KubeletConfigType, type KubeletConfigSpec, type MountSpec } from "../../machinery/resources/types/k8s.js";
import type { Controller } from "../../state/runtime/index.js";
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { dnsDomain, dnsServiceAddrs, serviceCIDRs } from "../../machinery/kubernetes/network.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";
import { STATIC_POD_SERVER_STATUS_ID, StaticPodServerStatusType } from "../../machinery/resources/types/k8s-controlplane.js";

export const KUBELET_ID = "kubelet";

export interface KubeletConfigOptions {
  /** False when this node does not run a kubelet (e.g. local mode without containerd). Default: true. */
  runsKubelet?: () => boolean;
}

export function kubeletConfigController(opts: KubeletConfigOptions = {}): Controller {
  const ptr = { namespace: K8S_NS, type: KubeletConfigType.type, id: KUBELET_ID };
  return {
    name: "k8s.KubeletConfigController",
    inputs: [machineConfigInput, { ...pointer(StaticPodServerStatusType, STATIC_POD_SERVER_STATUS_ID), kind: "weak" }],
    outputs: [{ type: KubeletConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!cfg?.v1alpha1() || cfg.machineType() === "unknown" || !(opts.runsKubelet?.() ?? true)) {
        ctx.destroy(ptr);
        return;
      }
      const server = readSpec(ctx, StaticPodServerStatusType, STATIC_POD_SERVER_STATUS_ID);
      if (!server) return;
      ctx.apply({ ...ptr, spec: kubeletConfigSpec(cfg, server.url) });
    },
  };
}

export function kubeletConfigSpec(cfg: MachineConfig, staticPodListURL: string): KubeletConfigSpec {
  const k = cfg.machine?.kubelet ?? {};
  const extraArgs: KubeletConfigSpec["extraArgs"] = {};
  for (const [name, v] of Object.entries(k.extraArgs ?? {})) extraArgs[name] = { values: Array.isArray(v) ? [...v] : [v] };
  return {
    image: k.image || `${KUBELET_IMAGE}:v${DEFAULT_KUBERNETES_VERSION}`,
    clusterDNS: k.clusterDNS?.length ? [...k.clusterDNS] : dnsServiceAddrs(serviceCIDRs(cfg)),
    clusterDomain: dnsDomain(cfg),
    extraArgs,
    extraMounts: (k.extraMounts ?? []).map(toMount),
    extraConfig: structuredClone(k.extraConfig ?? {}),
    cloudProviderExternal: cfg.cluster?.externalCloudProvider?.enabled ?? false,
    defaultRuntimeSeccompEnabled: k.defaultRuntimeSeccompProfileEnabled ?? false,
    skipNodeRegistration: k.skipNodeRegistration ?? false,
    staticPodListURL,
    disableManifestsDirectory: k.disableManifestsDirectory ?? false,
    enableFSQuotaMonitoring: cfg.machine?.features?.diskQuotaSupport ?? false,
    credentialProviderConfig: k.credentialProviderConfig ? structuredClone(k.credentialProviderConfig) : undefined,
    // Upstream's ScheduleOnControlPlanes(): either spelling of the field.
    allowSchedulingOnControlPlane: cfg.cluster?.allowSchedulingOnControlPlanes ?? cfg.cluster?.allowSchedulingOnMasters ?? false,
    registerWithTaints: { ...(cfg.machine?.nodeTaints ?? {}) },
  };
}

type ConfigMount = NonNullable<NonNullable<NonNullable<MachineConfig["machine"]>["kubelet"]>["extraMounts"]>[number];

function toMount(m: ConfigMount): MountSpec {
  const ids = (l: typeof m.uidMappings) =>
    (l ?? []).map((x) => ({ containerid: x.containerID ?? 0, hostid: x.hostID ?? 0, size: x.size ?? 0 }));
  return {
    destination: m.destination ?? "",
    type: m.type ?? "",
    source: m.source ?? "",
    options: [...(m.options ?? [])],
    uidmappings: ids(m.uidMappings),
    gidmappings: ids(m.gidMappings),
  };
}
