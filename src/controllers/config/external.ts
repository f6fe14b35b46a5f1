/**
 * Resource types published by other parts of the agent (the network controllers) or by nobody yet
 * (secrets), named here so core controllers can read them by type string without importing modules
 * that may not exist. Shapes are the YAML-shaped specs of talos-resource-api.md §3.2.
 */
export const NETWORK_NS = "network";
export const NODE_ADDRESS_TYPE = "NodeAddresses.net.talos.dev";
export const HOSTNAME_STATUS_TYPE = "HostnameStatuses.net.talos.dev";
export const NETWORK_STATUS_TYPE = "NetworkStatuses.net.talos.dev";
export const KUBELET_SECRETS_TYPE = "KubeletSecrets.secrets.talos.dev";
export const NODE_STATUS_TYPE = "NodeStatuses.kubernetes.talos.dev";

export interface NodeAddressLike {
  /** Prefixes as text, e.g. `10.5.0.2/24`. */
  addresses?: string[];
}

export interface HostnameStatusLike {
  hostname: string;
  domainname: string;
}

export interface NetworkStatusLike {
  addressReady: boolean;
  connectivityReady: boolean;
  hostnameReady: boolean;
  etcFilesReady: boolean;
}

/** Addresses of a NodeAddress spec without prefix lengths. */
export function nodeAddressIPs(spec: NodeAddressLike | undefined): string[] {
  return (spec?.addresses ?? []).map((p) => p.split("/")[0]);
}
