/**
 * The control-plane endpoints every consumer sees: all `Endpoints.kubernetes.talos.dev` resources of `controlplane`
 * (`controlplane`, `kube-apiserver`, `discovery`) merged, addresses deduplicated in netip order, then host names
 * sorted (upstream's EndpointList.Merge / Strings).
 */
import { compareAddr, formatAddr, parseAddr } from "../net/addr.js";
import type { EndpointSpec } from "../resources/types/k8s-status.js";

export function mergedEndpoints(specs: EndpointSpec[]): string[] {
  const addrs = new Map<string, Uint8Array>();
  const hosts = new Set<string>();
  for (const s of specs) {
    for (const a of s.addresses ?? []) {
      const ip = parseAddr(a);
      if (ip) addrs.set(formatAddr(ip), ip);
    }
    for (const h of s.hosts ?? []) if (h) hosts.add(h);
  }
  const sorted = [...addrs.values()].sort(compareAddr).map(formatAddr);
  return [...sorted, ...[...hosts].sort()];
}

/** `host:port`, brackets around an IPv6 address (Go's net.JoinHostPort). */
export function joinHostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}
