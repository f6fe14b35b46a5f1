/**
 * k8s.KubeletConfigController: the kubelet settings of the machine config (machine.kubelet, node
 * taints, cluster DNS) as the KubeletConfig resource `k8s`/`kubelet`. Only published when this node
 * runs a kubelet: `talosctl health` skips its kubelet check exactly when this resource is missing.
 */
import type { MachineConfig } from "../../machinery/config/index.js";
import { KUBELET_IMAGE, DEFAULT_KUBERNETES_VERSION } from "../../machinery/generate/constants.js";
import { K8S_NS, KubeletConfigType, type KubeletConfigSpec, type MountSpec } from "../../machinery/resources/types/k8s.js";
import type { Controller } from "../../state/runtime/index.js";
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { dnsDomain, dnsServiceAddrs, serviceCIDRs } from "../../machinery/kubernetes/network.js";

export const KUBELET_ID = "kubelet";

export interface KubeletConfigOptions {
  /** False when this node does not run a kubelet (e.g. local mode without containerd). Default: true. */
  runsKubelet?: () => boolean;
  /** URL of the static pod list the kubelet polls, when a static pod server runs. */
  staticPodListURL?: () => string;
}

export function kubeletConfigController(opts: KubeletConfigOptions = {}): Controller {
  const ptr = { namespace: K8S_NS, type: KubeletConfigType.type, id: KUBELET_ID };
  return {
    name: "k8s.KubeletConfigController",
    inputs: [machineConfigInput],
    outputs: [{ type: KubeletConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!cfg?.v1alpha1() || cfg.machineType() === "unknown" || !(opts.runsKubelet?.() ?? true)) {
        ctx.destroy(ptr);
        return;
      }
      ctx.apply({ ...ptr, spec: kubeletConfigSpec(cfg, opts.staticPodListURL?.() ?? "") });
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
