/**
 * Pure rules of cluster discovery: how raw affiliates from several registries merge into one per node id, and how
 * an affiliate travels through the Kubernetes registry as annotations on its Node object (upstream's
 * internal/pkg/discovery/registry/kubernetes.go: the same keys and the same comma-joined encodings, so nodes of
 * both implementations read each other).
 */
import { LABEL_NODE_ROLE_CONTROL_PLANE, type NodeObject } from "../../kubernetes/objects.js";
import { formatAddr, parseAddr, parsePrefix, formatPrefix } from "../../net/addr.js";
import type { AffiliateSpec } from "./discovery.js";

export const ANNOTATION = {
  nodeId: "cluster.talos.dev/node-id",
  selfIPs: "networking.talos.dev/self-ips",
  apiServerPort: "networking.talos.dev/api-server-port",
  kubeSpanIP: "networking.talos.dev/kubespan-ip",
  kubeSpanPublicKey: "networking.talos.dev/kubespan-public-key",
  kubeSpanAssignedPrefixes: "networking.talos.dev/assigned-prefixes",
  kubeSpanEndpoints: "networking.talos.dev/kubespan-endpoints",
  kubeSpanExcludeAdvertisedNetworks: "networking.talos.dev/kubespan-exclude-advertised-networks",
} as const;

type KubeSpan = NonNullable<AffiliateSpec["kubespan"]>;

const emptyKubeSpan = (): KubeSpan => ({ publicKey: "", address: "", additionalAddresses: [], endpoints: [], excludeAdvertisedNetworks: [] });

/** True when every KubeSpan field is zero: Go's omitempty then leaves `kubespan` out. */
export function kubeSpanIsZero(k: AffiliateSpec["kubespan"]): boolean {
  return !k || (!k.publicKey && !k.address && k.additionalAddresses.length === 0 && k.endpoints.length === 0 && k.excludeAdvertisedNetworks.length === 0);
}

const union = (into: string[], more: string[]) => {
  for (const x of more) if (!into.includes(x)) into.push(x);
};

/**
 * `other` merged into a copy of `base` (upstream AffiliateSpec.Merge): address lists are unions, and each scalar
 * that `other` sets wins. The node id is `base`'s; the OS is never taken from `other`, as upstream.
 */
export function mergeAffiliate(base: AffiliateSpec, other: AffiliateSpec): AffiliateSpec {
  const out: AffiliateSpec = structuredClone(base);
  union(out.addresses, other.addresses);
  if (other.controlPlane) out.controlPlane = { ...other.controlPlane };
  if (other.hostname) out.hostname = other.hostname;
  if (other.nodename) out.nodename = other.nodename;
  if (other.machineType !== "unknown") out.machineType = other.machineType;
  if (!kubeSpanIsZero(other.kubespan)) {
    const k = (out.kubespan ??= emptyKubeSpan());
    const o = other.kubespan!;
    if (o.publicKey) k.publicKey = o.publicKey;
    if (o.address) k.address = o.address;
    union(k.additionalAddresses, o.additionalAddresses);
    union(k.excludeAdvertisedNetworks, o.excludeAdvertisedNetworks);
    union(k.endpoints, o.endpoints);
  }
  if (kubeSpanIsZero(out.kubespan)) delete out.kubespan;
  return out;
}

/**
 * The annotations that carry `affiliate` (id = its node id); an empty value means "remove the annotation", as
 * upstream's Push does.
 */
export function annotationsFromAffiliate(id: string, affiliate: AffiliateSpec): Record<string, string> {
  const k = affiliate.kubespan ?? emptyKubeSpan();
  return {
    [ANNOTATION.nodeId]: id,
    [ANNOTATION.selfIPs]: affiliate.addresses.join(","),
    [ANNOTATION.apiServerPort]: affiliate.controlPlane ? String(affiliate.controlPlane.port) : "",
    [ANNOTATION.kubeSpanIP]: k.address,
    [ANNOTATION.kubeSpanPublicKey]: k.publicKey,
    [ANNOTATION.kubeSpanAssignedPrefixes]: k.additionalAddresses.join(","),
    [ANNOTATION.kubeSpanEndpoints]: k.endpoints.join(","),
    [ANNOTATION.kubeSpanExcludeAdvertisedNetworks]: k.excludeAdvertisedNetworks.join(","),
  };
}

const splitParsed = (text: string, parse: (s: string) => string | undefined): string[] =>
  text.split(",").flatMap((item) => {
    const v = parse(item);
    return v === undefined ? [] : [v];
  });

const ip = (s: string) => {
  const a = parseAddr(s);
  return a ? formatAddr(a) : undefined;
};
const prefix = (s: string) => {
  const p = parsePrefix(s);
  return p ? formatPrefix(p) : undefined;
};
const ipPort = (s: string) => {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(s);
  if (!m || Number(m[3]) > 65535) return undefined;
  const a = ip(m[1] ?? m[2]);
  if (!a) return undefined;
  return a.includes(":") ? `[${a}]:${Number(m[3])}` : `${a}:${Number(m[3])}`;
};

/**
 * The affiliate a Node object announces, or undefined when it carries no node id annotation (not part of
 * discovery). Node name and hostname come from the Node itself, the machine type from its control-plane role
 * label, the OS from the kubelet's `osImage`; malformed addresses are skipped, as upstream.
 */
export function affiliateFromNode(node: NodeObject): AffiliateSpec | undefined {
  const a = node.metadata?.annotations ?? {};
  const nodeId = a[ANNOTATION.nodeId];
  if (nodeId === undefined) return undefined;
  const status = node.status as (NodeObject["status"] & { nodeInfo?: { osImage?: string } }) | undefined;
  const out: AffiliateSpec = {
    nodeId,
    addresses: a[ANNOTATION.selfIPs] !== undefined ? splitParsed(a[ANNOTATION.selfIPs], ip) : [],
    hostname: status?.addresses?.find((x) => x.type === "Hostname")?.address ?? "",
    nodename: node.metadata?.name ?? "",
    operatingSystem: status?.nodeInfo?.osImage ?? "",
    machineType: node.metadata?.labels?.[LABEL_NODE_ROLE_CONTROL_PLANE] !== undefined ? "controlplane" : "worker",
  };
  const k = emptyKubeSpan();
  if (a[ANNOTATION.kubeSpanPublicKey] !== undefined) k.publicKey = a[ANNOTATION.kubeSpanPublicKey];
  if (a[ANNOTATION.kubeSpanIP] !== undefined) k.address = ip(a[ANNOTATION.kubeSpanIP]) ?? "";
  if (a[ANNOTATION.kubeSpanAssignedPrefixes] !== undefined) k.additionalAddresses = splitParsed(a[ANNOTATION.kubeSpanAssignedPrefixes], prefix);
  if (a[ANNOTATION.kubeSpanEndpoints] !== undefined) k.endpoints = splitParsed(a[ANNOTATION.kubeSpanEndpoints], ipPort);
  if (a[ANNOTATION.kubeSpanExcludeAdvertisedNetworks] !== undefined) {
    k.excludeAdvertisedNetworks = splitParsed(a[ANNOTATION.kubeSpanExcludeAdvertisedNetworks], prefix);
  }
  const port = a[ANNOTATION.apiServerPort];
  // Go's strconv.Atoi: an optional sign and decimal digits.
  if (port !== undefined && /^[+-]?\d+$/.test(port)) out.controlPlane = { port: Number(port) };
  if (!kubeSpanIsZero(k)) out.kubespan = k;
  return out;
}
