/** Observed addresses (`ip -N -j addr show`) → AddressStatus specs with ids `<link>/<addr>/<bits>`. */
import { type NetnsOptions, ipJson } from "./ip.js";
import { IFA_F_PERMANENT, IP_ADDRESS_FLAGS, SCOPES, addressFlagsText, familyName, ipNumber, scopeName } from "./names.js";
import type { AddressStatusSpec, Observed } from "./types.js";

export interface IpAddrInfo {
  family: string;
  local?: string;
  /** Present only when IFA_ADDRESS differs from IFA_LOCAL (the peer of a point-to-point address). */
  address?: string;
  prefixlen: number;
  broadcast?: string;
  anycast?: string;
  multicast?: string;
  scope?: string | number;
  metric?: number;
  ifa_flags?: string;
  [flag: string]: unknown;
}

export interface IpAddrLink {
  ifindex: number;
  ifname: string;
  addr_info?: IpAddrInfo[];
}

const FAMILY_NUMBERS: Record<string, number> = { inet: 2, inet6: 10 };

/** Rebuilds IFA_FLAGS from iproute2's booleans; it reports "dynamic" for the absence of permanent. */
export function addressFlags(a: IpAddrInfo): number {
  let bits = a.dynamic === true ? 0 : IFA_F_PERMANENT;
  for (const [key, bit] of Object.entries(IP_ADDRESS_FLAGS)) if (a[key] === true) bits |= bit;
  if (typeof a.ifa_flags === "string") bits |= Number.parseInt(a.ifa_flags, 16) || 0;
  return bits;
}

export function parseAddresses(json: IpAddrLink[]): Array<Observed<AddressStatusSpec>> {
  const out: Array<Observed<AddressStatusSpec>> = [];
  for (const link of json) {
    for (const a of link.addr_info ?? []) {
      const family = FAMILY_NUMBERS[a.family];
      if (family === undefined || !a.local) continue;
      // Upstream keys on IFA_ADDRESS (the peer for point-to-point) and reports IFA_LOCAL separately; the
      // kernel sends IFA_LOCAL for every IPv4 address but for IPv6 only alongside a peer.
      const address = `${a.address ?? a.local}/${a.prefixlen}`;
      const local = family === 2 || a.address !== undefined ? a.local : undefined;
      const spec: AddressStatusSpec = {
        address,
        ...(local ? { local } : {}),
        ...(a.broadcast ? { broadcast: a.broadcast } : {}),
        ...(a.anycast ? { anycast: a.anycast } : {}),
        ...(a.multicast ? { multicast: a.multicast } : {}),
        linkIndex: link.ifindex,
        linkName: link.ifname,
        family: familyName(family),
        scope: scopeName(ipNumber(a.scope ?? 0, SCOPES)),
        flags: addressFlagsText(addressFlags(a)),
        priority: a.metric ?? 0,
      };
      out.push({ id: `${link.ifname}/${address}`, spec });
    }
  }
  return out;
}

export async function observeAddresses(opts?: NetnsOptions): Promise<Array<Observed<AddressStatusSpec>>> {
  return parseAddresses(await ipJson<IpAddrLink[]>(["addr", "show"], opts));
}
