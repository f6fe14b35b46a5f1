/**
 * The control-plane endpoints as their consumers see them (upstream k8s.EndpointList): every
 * `Endpoints.kubernetes.talos.dev` resource in `controlplane` merged, addresses sorted and deduplicated, then the
 * host names. Used by etcd join/leave (on the client port) and the other clients of the control planes.
 */
import { compareAddr, formatAddr, parseAddr } from "../net/addr.js";
import type { EndpointSpec } from "../resources/types/k8s-status.js";

export interface EndpointList {
  addresses: string[];
  hosts: string[];
}

/** The union of `specs`: addresses in address order (IPv4 before IPv6), hosts in name order, each once. */
export function mergeEndpoints(specs: Iterable<EndpointSpec>): EndpointList {
  const addrs = new Map<string, Uint8Array>();
  const hosts = new Set<string>();
  for (const s of specs) {
    for (const a of s.addresses) {
      const ip = parseAddr(a);
      if (ip) addrs.set(formatAddr(ip), ip);
    }
    for (const h of s.hosts) hosts.add(h);
  }
  return {
    addresses: [...addrs.values()].sort(compareAddr).map(formatAddr),
    hosts: [...hosts].sort(),
  };
}

/** `host:port` for every endpoint (IPv6 bracketed), addresses first (upstream EndpointList.Strings + JoinHostPort). */
export function endpointHostPorts(list: EndpointList, port: number): string[] {
  return [...list.addresses, ...list.hosts].map((h) => (h.includes(":") ? `[${h}]:${port}` : `${h}:${port}`));
}
