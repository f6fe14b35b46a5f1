/** Observed addresses (an RTM_GETADDR dump) → AddressStatus specs with ids `<link>/<addr>/<bits>`. */
import { AF_INET, AF_INET6, ipText, type NlAddress, type NlLink } from "./netlink.js";
import { addressFlagsText, familyName, scopeName } from "./names.js";
import { withDumps } from "./rtnl.js";
import type { NetnsOptions } from "./links.js";
import type { AddressStatusSpec, Observed } from "./types.js";

export function addressSpecs(addrs: NlAddress[], links: NlLink[]): Array<Observed<AddressStatusSpec>> {
  const names = new Map(links.map((l) => [l.index, l.name]));
  const out: Array<Observed<AddressStatusSpec>> = [];
  // Link order first, then each link's addresses in dump order (IPv4 before IPv6), as `ip addr` lists them.
  const byLink = new Map<number, NlAddress[]>(links.map((l) => [l.index, []]));
  for (const a of addrs) byLink.get(a.index)?.push(a);
  for (const [index, list] of byLink) {
    const linkName = names.get(index)!;
    for (const a of list) {
      if (a.family !== AF_INET && a.family !== AF_INET6) continue;
      const peer = a.address ?? a.local;
      if (!peer) continue;
      // Upstream keys on IFA_ADDRESS (the peer for point-to-point) and reports IFA_LOCAL separately; the
      // kernel sends IFA_LOCAL for every IPv4 address but for IPv6 only alongside a peer.
      const address = `${ipText(peer)}/${a.prefixLen}`;
      const ownLocal = a.local ?? a.address;
      const local =
        a.family === AF_INET ? ownLocal : a.local && a.address && !a.local.equals(a.address) ? a.local : undefined;
      const spec: AddressStatusSpec = {
        address,
        ...(local ? { local: ipText(local) } : {}),
        ...(a.broadcast ? { broadcast: ipText(a.broadcast) } : {}),
        ...(a.anycast ? { anycast: ipText(a.anycast) } : {}),
        ...(a.multicast ? { multicast: ipText(a.multicast) } : {}),
        linkIndex: index,
        linkName,
        family: familyName(a.family),
        scope: scopeName(a.scope),
        flags: addressFlagsText(a.flags),
        priority: a.priority ?? 0,
      };
      out.push({ id: `${linkName}/${address}`, spec });
    }
  }
  return out;
}

export async function observeAddresses(opts?: NetnsOptions): Promise<Array<Observed<AddressStatusSpec>>> {
  return withDumps(opts?.netns, (d) => {
    const links = d.links();
    return addressSpecs(d.addresses(), links);
  });
}
