/**
 * IP address and prefix helpers with Go netip semantics (text form, ordering, containment), because
 * resource ids and YAML carry addresses exactly as Talos prints them.
 */
import { parseIP } from "../resources/protoenc.js";

export interface Prefix {
  /** 4 or 16 bytes. */
  ip: Uint8Array;
  bits: number;
}

export function parseAddr(text: string): Uint8Array | undefined {
  return parseIP(text.split("%")[0]);
}

/** `10.0.0.1/24`; a bare address becomes a host prefix (upstream parseIPOrIPPrefix). */
export function parsePrefix(text: string): Prefix | undefined {
  const slash = text.lastIndexOf("/");
  const ip = parseAddr(slash < 0 ? text : text.slice(0, slash));
  if (!ip) return undefined;
  const max = ip.length * 8;
  const bitsText = slash < 0 ? String(max) : text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bitsText) || Number(bitsText) > max) return undefined;
  return { ip, bits: Number(bitsText) };
}

export function formatAddr(ip: Uint8Array): string {
  if (ip.length === 4) return ip.join(".");
  const words = Array.from({ length: 8 }, (_, i) => (ip[2 * i] << 8) | ip[2 * i + 1]);
  // RFC 5952, as Go: compress the first longest run of two or more zero words.
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  const hex = (ws: number[]) => ws.map((w) => w.toString(16)).join(":");
  if (best < 0) return hex(words);
  return `${hex(words.slice(0, best))}::${hex(words.slice(best + bestLen))}`;
}

export function formatPrefix(p: Prefix): string {
  return `${formatAddr(p.ip)}/${p.bits}`;
}

/** Canonical text of an address (`fd00::0002` → `fd00::2`), or the input when it does not parse. */
export function canonicalAddr(text: string): string {
  const ip = parseAddr(text);
  return ip ? formatAddr(ip) : text;
}

export function isIPv4(ip: Uint8Array): boolean {
  return ip.length === 4;
}

export function isUnspecified(ip: Uint8Array): boolean {
  return ip.every((b) => b === 0);
}

export function isLoopback(ip: Uint8Array): boolean {
  return ip.length === 4 ? ip[0] === 127 : ip.slice(0, 15).every((b) => b === 0) && ip[15] === 1;
}

export function isMulticast(ip: Uint8Array): boolean {
  return ip.length === 4 ? ip[0] >= 224 && ip[0] < 240 : ip[0] === 0xff;
}

export function isLinkLocalUnicast(ip: Uint8Array): boolean {
  return ip.length === 4 ? ip[0] === 169 && ip[1] === 254 : ip[0] === 0xfe && (ip[1] & 0xc0) === 0x80;
}

/** Go's netip.Addr.Compare: IPv4 sorts before IPv6, then bytewise. */
export function compareAddr(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return a.length - b.length;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

export function contains(p: Prefix, ip: Uint8Array): boolean {
  if (p.ip.length !== ip.length) return false;
  let bits = p.bits;
  for (let i = 0; i < ip.length && bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((p.ip[i] & mask) !== (ip[i] & mask)) return false;
  }
  return true;
}

const cmp = (a: number, b: number) => (a < b ? -1 : a > b ? 1 : 0);

/** Sort algorithm v1 (upstream ComparePrefixesLegacy): by address, then prefix length. */
export function comparePrefixV1(a: Prefix, b: Prefix): number {
  return compareAddr(a.ip, b.ip) || cmp(a.bits, b.bits);
}

/** Sort algorithm v2 (upstream ComparePrefixNew): family, then more specific containing networks first. */
export function comparePrefixV2(a: Prefix, b: Prefix): number {
  const fam = cmp(a.ip.length, b.ip.length);
  if (fam) return fam;
  if (compareAddr(a.ip, b.ip) === 0) return -cmp(a.bits, b.bits);
  const aContainsB = contains(a, b.ip);
  const bContainsA = contains(b, a.ip);
  if (aContainsB && !bContainsA) return 1;
  if (!aContainsB && bContainsA) return -1;
  return compareAddr(a.ip, b.ip);
}

/** The IPv4 broadcast address of a prefix, as upstream computes it (none for /31, /32 and IPv6). */
export function broadcastAddr(p: Prefix): string | undefined {
  if (p.ip.length !== 4 || p.bits >= 31) return undefined;
  const out = Uint8Array.from(p.ip);
  let bits = p.bits;
  for (let i = 0; i < 4; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : bits <= 0 ? 0 : (0xff << (8 - bits)) & 0xff;
    out[i] = (out[i] & mask) | (~mask & 0xff);
  }
  return formatAddr(out);
}
