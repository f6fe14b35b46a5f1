/**
 * What the bootstrap and extra manifests are rendered from, derived from the machine config with Talos' defaults
 * (upstream's ControlPlaneBootstrapManifestsController and ControlPlaneExtraManifestsController transforms).
 */
import type { MachineConfig } from "../config/index.js";
import {
  COREDNS_IMAGE,
  DEFAULT_COREDNS_VERSION,
  DEFAULT_FLANNEL_VERSION,
  DEFAULT_KUBEPRISM_PORT,
  DEFAULT_KUBERNETES_VERSION,
  FLANNEL_IMAGE,
  KUBE_PROXY_IMAGE,
} from "../generate/constants.js";
import type { BootstrapManifestsConfigSpec, ExtraManifest, ExtraManifestsConfigSpec } from "../resources/types/k8s-manifests.js";
import { args, extraArgs, mergeArgs, renderArgs } from "./args.js";
import { dnsDomain, dnsServiceAddrs, podCIDRs, serviceCIDRs } from "./network.js";

export const FLANNEL_CNI = "flannel";
export const KUBE_NETWORK_POLICIES_IMAGE = "registry.k8s.io/networking/kube-network-policies:v1.1.0";

/** `cluster.network.cni.name`; a config without a `cni` section gets flannel. */
export function cniName(cfg: MachineConfig): string {
  const cni = cfg.cluster?.network?.cni;
  return cni ? (cni.name ?? "") : FLANNEL_CNI;
}

export function kubePrism(cfg: MachineConfig): { enabled: boolean; port: number } {
  const k = cfg.machine?.features?.kubePrism;
  return { enabled: k?.enabled === true, port: k?.port || DEFAULT_KUBEPRISM_PORT };
}

export function kubeProxyImage(cfg: MachineConfig): string {
  return cfg.cluster?.proxy?.image || `${KUBE_PROXY_IMAGE}:v${DEFAULT_KUBERNETES_VERSION}`;
}

/**
 * kube-proxy's flags: nftables from Kubernetes 1.31 on (by the image tag), iptables before or when the tag is not a
 * version; `cluster.proxy.extraArgs` override, except the kubeconfig (the in-cluster one is what it may use).
 */
export function kubeProxyArgs(cfg: MachineConfig): string[] {
  const mode = cfg.cluster?.proxy?.mode || (imageVersionAtLeast(kubeProxyImage(cfg), [1, 31, 0]) ? "nftables" : "iptables");
  const a = args({
    "cluster-cidr": podCIDRs(cfg).join(","),
    "hostname-override": "$(NODE_NAME)",
    kubeconfig: "/etc/kubernetes/kubeconfig",
    "proxy-mode": mode,
    "conntrack-max-per-core": "0",
  });
  mergeArgs(a, extraArgs(cfg.cluster?.proxy?.extraArgs), { kubeconfig: "denied" });
  return renderArgs(a);
}

/** Whether an image's tag is a version ≥ `min` (pre-release ignored); false for a digest-only or non-version tag. */
export function imageVersionAtLeast(image: string, min: [number, number, number]): boolean {
  const at = image.indexOf("@");
  const ref = at < 0 ? image : image.slice(0, at);
  const colon = ref.lastIndexOf(":");
  if (colon < 0 || ref.indexOf("/", colon) >= 0) return false;
  const m = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+].*)?$/.exec(ref.slice(colon + 1));
  if (!m) return false;
  const v = [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)];
  for (let i = 0; i < 3; i++) if (v[i] !== min[i]) return v[i] > min[i];
  return true;
}

export function bootstrapManifestsConfigSpec(cfg: MachineConfig): BootstrapManifestsConfigSpec {
  const c = cfg.cluster ?? {};
  const dns = dnsServiceAddrs(serviceCIDRs(cfg));
  const prism = kubePrism(cfg);
  const cni = cniName(cfg);
  const flannel = c.network?.cni?.flannel;
  return {
    server: prism.enabled ? `https://127.0.0.1:${prism.port}` : (cfg.endpoint() ?? ""),
    clusterDomain: dnsDomain(cfg),
    podCIDRs: podCIDRs(cfg),
    proxyEnabled: c.proxy?.disabled !== true,
    proxyImage: kubeProxyImage(cfg),
    proxyArgs: kubeProxyArgs(cfg),
    coreDNSEnabled: c.coreDNS?.disabled !== true,
    coreDNSImage: c.coreDNS?.image || `${COREDNS_IMAGE}:${DEFAULT_COREDNS_VERSION}`,
    dnsServiceIP: dns.find((ip) => ip.includes(".")) ?? "",
    dnsServiceIPv6: dns.find((ip) => ip.includes(":")) ?? "",
    flannelEnabled: cni === FLANNEL_CNI,
    flannelImage: `${FLANNEL_IMAGE}:${DEFAULT_FLANNEL_VERSION}`,
    flannelExtraArgs: [...(flannel?.extraArgs ?? [])],
    flannelKubeServiceHost: prism.enabled ? "127.0.0.1" : "",
    flannelKubeServicePort: prism.enabled ? String(prism.port) : "",
    flannelKubeNetworkPoliciesEnabled: flannel?.kubeNetworkPoliciesEnabled === true,
    flannelKubeNetworkPoliciesImage: KUBE_NETWORK_POLICIES_IMAGE,
    podSecurityPolicyEnabled: false,
    talosAPIServiceEnabled: cfg.machine?.features?.kubernetesTalosAPIAccess?.enabled === true,
    cniName: cni,
  };
}

/**
 * The manifests the user adds: CNI URLs first (priority 05, before the bootstrap ones that need a network), the
 * external cloud provider's (30, after them), then `extraManifests` and `inlineManifests` (99, last).
 */
export function extraManifestsConfigSpec(cfg: MachineConfig): ExtraManifestsConfigSpec {
  const c = cfg.cluster ?? {};
  const m = (name: string, priority: string, extra: Partial<ExtraManifest> = {}): ExtraManifest => ({
    name,
    url: "",
    priority,
    extraHeaders: {},
    inlineManifest: "",
    ...extra,
  });
  return {
    extraManifests: [
      ...(c.network?.cni?.urls ?? []).map((url) => m(url, "05", { url })),
      ...(c.externalCloudProvider?.manifests ?? []).map((url) => m(url, "30", { url })),
      ...(c.extraManifests ?? []).map((url) => m(url, "99", { url, extraHeaders: { ...(c.extraManifestHeaders ?? {}) } })),
      ...(c.inlineManifests ?? []).map((im) => m(im.name ?? "", "99", { inlineManifest: im.contents ?? "" })),
    ],
  };
}
