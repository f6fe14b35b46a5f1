/**
 * IP address, CIDR, URL and size parsing with the same acceptance rules as the Go functions upstream validation
 * uses (net.ParseIP, net.ParseCIDR, humanize.ParseBytes), written here so the config layer stays dependency-free.
 */

/** Parses dotted IPv4 (no leading zeros, as Go ≥ 1.17) into 4 bytes. */
export function parseIPv4(s: string): number[] | undefined {
  const parts = s.split(".");
  if (parts.length !== 4) return undefined;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || (p.length > 1 && p.startsWith("0"))) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    out.push(n);
  }
  return out;
}

/** Parses IPv6 text (with `::` compression and an optional trailing dotted IPv4) into 16 bytes. Zones are rejected. */
export function parseIPv6(s: string): number[] | undefined {
  if (!s.includes(":") || s.includes("%")) return undefined;
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const groups = (h: string): number[] | undefined => {
    if (h === "") return [];
    const out: number[] = [];
    const parts = h.split(":");
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (i === parts.length - 1 && p.includes(".")) {
        const v4 = parseIPv4(p);
        if (!v4) return undefined;
        out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(p)) out.push(parseInt(p, 16));
      else return undefined;
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  if (!head || !tail) return undefined;
  const fill = 8 - head.length - tail.length;
  if (halves.length === 2 ? fill < 1 : fill !== 0) return undefined;
  const all = [...head, ...new Array<number>(halves.length === 2 ? fill : 0).fill(0), ...tail];
  return all.flatMap((g) => [g >> 8, g & 0xff]);
}

export function parseIP(s: string): number[] | undefined {
  return parseIPv4(s) ?? parseIPv6(s);
}

export interface Cidr {
  ip: number[];
  bits: number;
}

/** Go net.ParseCIDR: `address/prefix-length`, the length within the address family's size. */
export function parseCIDR(s: string): Cidr | undefined {
  const slash = s.indexOf("/");
  if (slash < 0) return undefined;
  const ip = parseIP(s.slice(0, slash));
  const len = s.slice(slash + 1);
  if (!ip || !/^\d{1,3}$/.test(len) || (len.length > 1 && len.startsWith("0"))) return undefined;
  const bits = Number(len);
  return bits <= ip.length * 8 ? { ip, bits } : undefined;
}

/** Problem text for an address that must be an IP or a CIDR (upstream validateIPOrCIDR), or undefined if fine. */
export function checkIPOrCIDR(s: string): string | undefined {
  if (s.includes("/")) return parseCIDR(s) ? undefined : `invalid CIDR ${JSON.stringify(s)}`;
  return parseIP(s) ? undefined : `invalid IP address ${JSON.stringify(s)}`;
}

/** siderolabs/net ParseSubnetOrAddress: a CIDR, or a bare address meaning a host prefix. */
export function isSubnetOrAddress(s: string): boolean {
  return s.includes("/") ? parseCIDR(s) !== undefined : parseIP(s) !== undefined;
}

/** True for `host:port` / `[v6]:port` with a numeric port. */
export function hasPort(s: string): boolean {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(s);
  return m !== null && Number(m[3]) <= 65535;
}

/** Parses a URL, returning undefined instead of throwing. */
export function tryURL(s: string): URL | undefined {
  try {
    return new URL(s);
  } catch {
    return undefined;
  }
}

/** Checks an https endpoint URL (scheme https, a host, a valid port if given); returns a problem or undefined. */
export function checkHttpsEndpoint(s: string): string | undefined {
  const u = tryURL(s);
  if (!u) return `invalid URL ${JSON.stringify(s)}`;
  if (u.protocol !== "https:") return `URL scheme must be https, got ${JSON.stringify(s)}`;
  if (u.hostname === "") return `URL has no host: ${JSON.stringify(s)}`;
  return undefined;
}

const units: Record<string, number> = {
  "": 1, b: 1,
  k: 1e3, kb: 1e3, m: 1e6, mb: 1e6, g: 1e9, gb: 1e9, t: 1e12, tb: 1e12, p: 1e15, pb: 1e15, e: 1e18, eb: 1e18,
  ki: 2 ** 10, kib: 2 ** 10, mi: 2 ** 20, mib: 2 ** 20, gi: 2 ** 30, gib: 2 ** 30, ti: 2 ** 40, tib: 2 ** 40,
  pi: 2 ** 50, pib: 2 ** 50, ei: 2 ** 60, eib: 2 ** 60,
};

/** humanize.ParseBytes: "100 MB", "1.5GiB", "1073741824". Returns bytes or undefined. */
export function parseBytes(s: string): number | undefined {
  const m = /^\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*$/.exec(s.replace(/,/g, ""));
  if (!m) return undefined;
  const mult = units[m[2].toLowerCase()];
  return mult === undefined ? undefined : Math.floor(Number(m[1]) * mult);
}
