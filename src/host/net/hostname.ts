/** The kernel's host and domain name → the HostnameStatus spec (id `hostname`). */
import { readDomainname, readHostname } from "../proc/system.js";
import type { HostnameStatusSpec, Observed } from "./types.js";

export const HOSTNAME_ID = "hostname";

/**
 * Talos sets the kernel hostname to the short name and the domain separately; a host that stores an
 * FQDN in the hostname is split at the first dot so the spec still reads hostname + domainname.
 */
export function hostnameSpec(hostname: string, domainname: string): HostnameStatusSpec {
  const dot = hostname.indexOf(".");
  if (dot > 0 && !domainname) return { hostname: hostname.slice(0, dot), domainname: hostname.slice(dot + 1) };
  return { hostname, domainname };
}

export async function observeHostname(opts?: { root?: string }): Promise<Observed<HostnameStatusSpec>> {
  const [hostname, domainname] = await Promise.all([readHostname(opts), readDomainname(opts).catch(() => "")]);
  return { id: HOSTNAME_ID, spec: hostnameSpec(hostname, domainname) };
}
