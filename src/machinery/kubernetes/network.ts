/** Kubernetes network facts derived from the cluster config, with the defaults Talos applies. */
import type { MachineConfig } from "../config/index.js";
import { DEFAULT_DNS_DOMAIN, POD_CIDR_V4, SERVICE_CIDR_V4 } from "../generate/constants.js";
import { parseIP } from "../resources/protoenc.js";

export function serviceCIDRs(cfg: MachineConfig): string[] {
  const s = cfg.cluster?.network?.serviceSubnets;
  return s && s.length > 0 ? [...s] : [SERVICE_CIDR_V4];
}

export function podCIDRs(cfg: MachineConfig): string[] {
  const s = cfg.cluster?.network?.podSubnets;
  return s && s.length > 0 ? [...s] : [POD_CIDR_V4];
}

export function dnsDomain(cfg: MachineConfig): string {
  return cfg.cluster?.network?.dnsDomain || DEFAULT_DNS_DOMAIN;
}

/** The cluster DNS service address of each service CIDR: its 10th address (10.96.0.0/12 → 10.96.0.10). */
export function dnsServiceAddrs(cidrs: string[]): string[] {
  return cidrs.flatMap((cidr) => {
    const [addr] = cidr.split("/");
    const bytes = parseIP(addr);
    if (!bytes) return [];
    let n = 0n;
    for (const b of bytes) n = (n << 8n) | BigInt(b);
    n += 10n;
    return [formatIP(n, bytes.length)];
  });
}

function formatIP(n: bigint, len: number): string {
  const bytes: number[] = [];
  for (let i = 0; i < len; i++) bytes.unshift(Number((n >> BigInt(8 * i)) & 0xffn));
  if (len === 4) return bytes.join(".");
  const words = [];
  for (let i = 0; i < 16; i += 2) words.push(((bytes[i] << 8) | bytes[i + 1]).toString(16));
  // Compress the longest run of zero words, as Go prints IPv6.
  let best = { at: -1, len: 0 };
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && words[j] === "0") j++;
    if (j - i > best.len && j - i > 1) best = { at: i, len: j - i };
    i = j === i ? i + 1 : j;
  }
  if (best.at < 0) return words.join(":");
  return `${words.slice(0, best.at).join(":")}::${words.slice(best.at + best.len).join(":")}`;
}

/**
 * The `n`th address of each service CIDR (counted from the network address, so a CIDR written with host bits set
 * gives the same answer), as upstream's NthIPInCIDRSet: n = 1 → the API server's service IPs (10.96.0.1), n = 10
 * → the DNS service IPs. A CIDR that does not parse, or is too small for `n`, is an error naming it.
 */
export function nthIPs(cidrs: string[], n: number): string[] {
  return cidrs.map((cidr) => {
    const [addr, bitsText, extra] = cidr.trim().split("/");
    const bytes = addr ? parseIP(addr) : undefined;
    const width = bytes ? bytes.length * 8 : 0;
    const bits = /^\d+$/.test(bitsText ?? "") ? Number(bitsText) : NaN;
    if (!bytes || extra !== undefined || !(bits >= 0 && bits <= width)) {
      throw new Error(`failed to process Service CIDRs: invalid CIDR ${JSON.stringify(cidr)}`);
    }
    let value = 0n;
    for (const b of bytes) value = (value << 8n) | BigInt(b);
    const hostBits = BigInt(width - bits);
    const network = (value >> hostBits) << hostBits;
    if (BigInt(n) >= 1n << hostBits) throw new Error(`failed to process Service CIDRs: ${cidr} has no address number ${n}`);
    return formatIP(network + BigInt(n), bytes.length);
  });
}

/** The first address of each service CIDR: the `kubernetes` Service's ClusterIPs, which the API server certificate names. */
export function apiServerIPs(cidrs: string[]): string[] {
  return nthIPs(cidrs, 1);
}
