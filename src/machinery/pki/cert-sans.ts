/** Building a CertSAN spec as upstream's CertSANSpec methods do: skip duplicates and empty names, drop trailing dots, sort. */
import { parseIP } from "../config/net.js";
import type { CertSANSpec } from "../resources/types/secrets.js";

export function certSANs(ips: string[], dnsNames: string[], fqdn: string): CertSANSpec {
  const ipSet = new Map<string, number[]>();
  for (const ip of ips) {
    const bytes = parseIP(ip);
    if (bytes && !ipSet.has(ip)) ipSet.set(ip, bytes);
  }
  const names = new Set<string>();
  for (const n of dnsNames) {
    const name = n.replace(/\.+$/, "");
    if (name) names.add(name);
  }
  return {
    ips: [...ipSet].sort(([, a], [, b]) => compareIP(a, b)).map(([ip]) => ip),
    dnsNames: [...names].sort(),
    fqdn,
  };
}

/** netip.Addr.Compare: IPv4 before IPv6, then bytewise. */
function compareIP(a: number[], b: number[]): number {
  if (a.length !== b.length) return a.length - b.length;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}
