/**
 * Checks of the `cluster` section (upstream ClusterConfig.Validate, ValidateCNI, etcd, discovery, inline manifests).
 */
import { checkHttpsEndpoint, isSubnetOrAddress, parseCIDR, tryURL } from "../net.js";
import type { ClusterSection } from "../schema.js";
import type { Report } from "./report.js";

const dnsName = /^([a-zA-Z0-9_][a-zA-Z0-9_-]{0,62})(\.[a-zA-Z0-9_][a-zA-Z0-9_-]{0,62})*[._]?$/;

/** `role` is unknown when machine.type is invalid: role-specific rules are skipped then (the type error says it). */
export function checkCluster(c: ClusterSection, role: "controlplane" | "worker" | "unknown", r: Report): void {
  if (c.controlPlane) {
    const ep = c.controlPlane.endpoint;
    if (!ep) r.error("cluster.controlPlane.endpoint", "cluster controlplane endpoint is required");
    else {
      const bad = checkHttpsEndpoint(ep);
      if (bad) r.error("cluster.controlPlane.endpoint", `invalid controlplane endpoint: ${bad}`);
    }
  }

  const dns = c.network?.dnsDomain;
  if (dns && !(dns.length - (dns.match(/\./g)?.length ?? 0) <= 255 && dnsName.test(dns))) {
    r.error("cluster.network.dnsDomain", `${JSON.stringify(dns)} is not a valid DNS name`);
  }
  for (const field of ["podSubnets", "serviceSubnets"] as const) {
    c.network?.[field]?.forEach((s, i) => {
      if (!parseCIDR(s)) r.error(`cluster.network.${field}[${i}]`, `invalid CIDR ${JSON.stringify(s)}`);
    });
  }

  const ecp = c.externalCloudProvider;
  if (ecp) {
    if (!ecp.enabled && (ecp.manifests?.length ?? 0) > 0) {
      r.error("cluster.externalCloudProvider", "external cloud provider is disabled, but manifests are provided");
    }
    ecp.manifests?.forEach((u, i) => {
      const bad = checkHttpsEndpoint(u);
      if (bad) r.error(`cluster.externalCloudProvider.manifests[${i}]`, `invalid external cloud provider manifest url: ${bad}`);
    });
  }

  if (c.etcd) {
    if (role === "worker") r.error("cluster.etcd", "etcd config is only allowed on control plane machines");
    else checkEtcd(c.etcd, r);
  }
  if (role === "worker" && c.ca?.key) r.error("cluster.ca.key", "cluster CA key is not allowed on non-controlplane nodes");

  const names = new Set<string>();
  c.inlineManifests?.forEach((m, i) => {
    const name = m.name ?? "";
    if (name.trim() === "") r.error(`cluster.inlineManifests[${i}].name`, "inline manifest name can't be empty");
    else if (names.has(name)) r.error(`cluster.inlineManifests[${i}].name`, `inline manifest name ${JSON.stringify(name)} is duplicate`);
    names.add(name);
  });

  const disc = c.discovery;
  if (disc?.enabled && !disc.registries?.service?.disabled) {
    const endpoint = disc.registries?.service?.endpoint;
    if (endpoint !== undefined) {
      const u = tryURL(endpoint);
      if (!u) r.error("cluster.discovery.registries.service.endpoint", `cluster discovery service registry endpoint is invalid: ${JSON.stringify(endpoint)}`);
      else if (u.pathname !== "" && u.pathname !== "/") {
        r.error("cluster.discovery.registries.service.endpoint", "cluster discovery service path should be empty");
      }
    }
    if (!c.id) r.error("cluster.id", "cluster discovery service requires .cluster.id");
    if (!c.secret) r.error("cluster.secret", "cluster discovery service requires .cluster.secret");
  }
}

function checkEtcd(e: NonNullable<ClusterSection["etcd"]>, r: Report): void {
  if (!e.ca?.crt) r.error("cluster.etcd.ca", "key/cert combination should not be empty");
  if (e.subnet && (e.advertisedSubnets?.length ?? 0) > 0) {
    r.error("cluster.etcd.subnet", "etcd subnet can't be set when advertised subnets are set");
  }
  e.advertisedSubnets?.forEach((s, i) => {
    if (!isSubnetOrAddress(s.replace(/^!/, ""))) r.error(`cluster.etcd.advertisedSubnets[${i}]`, `etcd advertised subnet is not valid: ${JSON.stringify(s)}`);
  });
  e.listenSubnets?.forEach((s, i) => {
    if (!isSubnetOrAddress(s.replace(/^!/, ""))) r.error(`cluster.etcd.listenSubnets[${i}]`, `etcd listen subnet is not valid: ${JSON.stringify(s)}`);
  });
}

/** Control-plane only: the CNI name and its URLs (upstream ValidateCNI). */
export function checkCNI(c: ClusterSection, r: Report): void {
  const cni = c.network?.cni;
  if (!cni) return;
  const name = cni.name ?? "";
  const urls = cni.urls ?? [];
  const flannelArgs = cni.flannel?.extraArgs ?? [];
  const p = "cluster.network.cni";
  switch (name) {
    case "flannel":
      if (urls.length) r.error(`${p}.urls`, `"urls" field should be empty for "flannel" CNI`);
      break;
    case "none":
    case "custom":
      if (name === "none" && urls.length) r.error(`${p}.urls`, `"urls" field should be empty for "none" CNI`);
      if (name === "custom" && urls.length === 0) r.warn(`${p}.urls`, `"urls" field should not be empty for "custom" CNI`);
      if (flannelArgs.length) r.error(`${p}.flannel.extraArgs`, `"flanneldExtraArgs" field should be empty for ${JSON.stringify(name)} CNI`);
      if (cni.flannel?.kubeNetworkPoliciesEnabled) {
        r.error(`${p}.flannel.kubeNetworkPoliciesEnabled`, `"flannelKubeNetworkPoliciesEnabled" should not be enabled for ${JSON.stringify(name)} CNI`);
      }
      if (name === "custom") {
        urls.forEach((u, i) => {
          const bad = checkHttpsEndpoint(u);
          if (bad) r.error(`${p}.urls[${i}]`, bad);
        });
      }
      break;
    default:
      r.error(`${p}.name`, `cni name should be one of ["flannel", "custom", "none"], got ${JSON.stringify(name)}`);
  }
}
