/**
 * etcd.SpecController: what the etcd service runs with (EtcdSpec `etcd`), after upstream's etcd spec controller.
 * The member name is the short hostname (HostnameStatus), not the FQDN. Advertised: the first routed address
 * (without Kubernetes addresses) unless advertisedSubnets pick, among the current ones, every match. Listen:
 * 0.0.0.0 unless listenSubnets pick routed addresses (the client port then also listens on 127.0.0.1).
 * Publishes nothing until the node has a routed address, as upstream.
 */
import { parseCIDR, parseIP } from "../../machinery/config/net.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";
import { ETCD_ID, EtcdConfigType, EtcdSpecType, type EtcdSpecSpec } from "../../machinery/resources/types/etcd.js";
import { HOSTNAME_ID, HostnameSpecType, HostnameStatusType, NETWORK_NS, NODE_ADDRESS, NodeAddressType, nodeAddressIPs } from "../../machinery/resources/types/network.js";
import type { Controller } from "../../state/runtime/index.js";

export function etcdSpecController(): Controller {
  const ptr = pointer(EtcdSpecType, ETCD_ID);
  return {
    name: "etcd.SpecController",
    inputs: [
      { ...pointer(EtcdConfigType, ETCD_ID), kind: "weak" },
      { ...pointer(HostnameStatusType, HOSTNAME_ID), kind: "weak" },
      { ...pointer(HostnameSpecType, HOSTNAME_ID), kind: "weak" },
      { namespace: NETWORK_NS, type: NodeAddressType.type, id: NODE_ADDRESS.routedNoK8s, kind: "weak" },
      { namespace: NETWORK_NS, type: NodeAddressType.type, id: NODE_ADDRESS.currentNoK8s, kind: "weak" },
    ],
    outputs: [{ type: EtcdSpecType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const config = readSpec(ctx, EtcdConfigType, ETCD_ID);
      if (!config) {
        ctx.destroy(ptr);
        return;
      }
      const hs = readSpec(ctx, HostnameStatusType, HOSTNAME_ID);
      const routed = nodeAddressIPs(readSpec(ctx, NodeAddressType, NODE_ADDRESS.routedNoK8s));
      const current = nodeAddressIPs(readSpec(ctx, NodeAddressType, NODE_ADDRESS.currentNoK8s));
      if (!hs || routed.length === 0) return;
      // The member name is fixed once etcd runs: wait until the kernel has the hostname the node is meant to have.
      const want = readSpec(ctx, HostnameSpecType, HOSTNAME_ID);
      if (want && want.hostname !== hs.hostname) return;
      const exclude = (list: string[]) => list.map((c) => `!${c}`);
      let advertised: string[];
      if (config.advertiseValidSubnets?.length) {
        advertised = filterIPs(current, [...config.advertiseValidSubnets, ...exclude(config.advertiseExcludeSubnets)]);
      } else {
        advertised = filterIPs(routed, ["0.0.0.0/0", "::/0", ...exclude(config.advertiseExcludeSubnets)]).slice(0, 1);
      }
      const listenCIDRs = [...(config.listenValidSubnets ?? []), ...exclude(config.listenExcludeSubnets)];
      let listenPeer: string[];
      let listenClient: string[];
      if (listenCIDRs.length > 0) {
        listenPeer = filterIPs(routed, listenCIDRs);
        listenClient = ["127.0.0.1", ...listenPeer];
      } else {
        listenPeer = ["0.0.0.0"];
        listenClient = ["0.0.0.0"];
      }
      if (advertised.length === 0 || listenPeer.length === 0) return;
      const spec: EtcdSpecSpec = {
        name: hs.hostname,
        advertisedAddresses: advertised,
        listenPeerAddresses: listenPeer,
        listenClientAddresses: listenClient,
        image: config.image,
        extraArgs: config.extraArgs,
      };
      ctx.apply({ ...ptr, spec });
    },
  };
}

/**
 * upstream net.FilterIPs: an address passes when it matches some positive CIDR (or there are only negative ones)
 * and no `!`-prefixed one. A CIDR may also be a bare address.
 */
export function filterIPs(addrs: string[], cidrs: string[]): string[] {
  const positive = cidrs.filter((c) => !c.startsWith("!")).map(toCidr);
  const negative = cidrs.filter((c) => c.startsWith("!")).map((c) => toCidr(c.slice(1)));
  return addrs.filter((a) => {
    const ip = parseIP(a);
    if (!ip) return false;
    const inAny = (list: Array<{ ip: number[]; bits: number }>) => list.some((c) => contains(c, ip));
    return (positive.length === 0 || inAny(positive)) && !inAny(negative);
  });
}

function toCidr(s: string): { ip: number[]; bits: number } {
  const c = parseCIDR(s);
  if (c) return c;
  const ip = parseIP(s);
  if (!ip) throw new Error(`invalid subnet ${JSON.stringify(s)}`);
  return { ip, bits: ip.length * 8 };
}

function contains(c: { ip: number[]; bits: number }, ip: number[]): boolean {
  if (c.ip.length !== ip.length) return false;
  for (let bit = 0; bit < c.bits; bit++) {
    const byte = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    if ((c.ip[byte] & mask) !== (ip[byte] & mask)) return false;
  }
  return true;
}
