/**
 * secrets.KubernetesCertSANsController (control planes): CertSANs `k8s`, the names the API server certificate
 * carries — the cluster endpoint's host, cluster.apiServer.certSANs, kubernetes, kubernetes.default,
 * kubernetes.default.svc, kubernetes.default.svc.<domain>, localhost, the hostname and FQDN, the API server
 * service IPs, every address the node has had (without Kubernetes ones) and 127.0.0.1; sorted and deduplicated.
 */
import { parseIP } from "../../machinery/config/net.js";
import { certSANs } from "../../machinery/pki/cert-sans.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";
import {
  fqdn,
  HOSTNAME_ID,
  HostnameStatusType,
  NETWORK_NS,
  NODE_ADDRESS,
  NodeAddressType,
  nodeAddressIPs,
} from "../../machinery/resources/types/network.js";
import { CertSANType, KubernetesRootType, SECRET_IDS, type KubernetesRootSpec } from "../../machinery/resources/types/secrets.js";
import type { Controller } from "../../state/runtime/index.js";

export function kubernetesCertSANsController(): Controller {
  const ptr = pointer(CertSANType, SECRET_IDS.k8s);
  return {
    name: "secrets.KubernetesCertSANsController",
    inputs: [
      { ...pointer(KubernetesRootType, SECRET_IDS.k8s), kind: "weak" },
      { ...pointer(HostnameStatusType, HOSTNAME_ID), kind: "weak" },
      { namespace: NETWORK_NS, type: NodeAddressType.type, id: NODE_ADDRESS.accumulativeNoK8s, kind: "weak" },
    ],
    outputs: [{ type: CertSANType.type, kind: "shared" }],
    reconcile(ctx) {
      const root = readSpec(ctx, KubernetesRootType, SECRET_IDS.k8s);
      if (!root) {
        ctx.destroy(ptr);
        return;
      }
      const hs = readSpec(ctx, HostnameStatusType, HOSTNAME_ID);
      const addrs = readSpec(ctx, NodeAddressType, NODE_ADDRESS.accumulativeNoK8s);
      if (!hs || !addrs) return; // Upstream waits for both rather than publishing a partial set.
      ctx.apply({ ...ptr, spec: kubernetesSANs(root, hs.hostname, fqdn(hs), nodeAddressIPs(addrs)) });
    },
  };
}

export function kubernetesSANs(root: KubernetesRootSpec, hostname: string, nodeFQDN: string, addresses: string[]) {
  const ips: string[] = [];
  const names: string[] = [];
  // Upstream's Append: a value that parses as an address is an IP SAN, anything else a DNS name.
  const append = (...values: string[]) => {
    for (const v of values) (parseIP(v) !== undefined ? ips : names).push(v);
  };
  append(endpointHost(root.endpoint), ...root.certSANs);
  names.push("kubernetes", "kubernetes.default", "kubernetes.default.svc", `kubernetes.default.svc.${root.dnsDomain}`, "localhost");
  append(hostname, nodeFQDN);
  ips.push(...root.apiServerIPs, ...addresses, "127.0.0.1");
  return certSANs(ips, names, "");
}

/** The host of a URL without IPv6 brackets (url.URL.Hostname()); "" when it does not parse. */
function endpointHost(endpoint: string): string {
  try {
    return new URL(endpoint).hostname.replace(/^\[(.*)\]$/, "$1");
  } catch {
    return "";
  }
}
