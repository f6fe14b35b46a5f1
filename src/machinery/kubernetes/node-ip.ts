/**
 * The kubelet's node IP: which subnets it may come from (machine.kubelet.nodeIP.validSubnets, else "any address
 * of each service CIDR's family"), which it may not (pod and service CIDRs, virtual IPs), and the pick among the
 * node's routed addresses (at most one IPv4 and one IPv6), as upstream's NodeIPConfig/NodeIP controllers do.
 */
import type { MachineConfig } from "../config/index.js";
import { contains, formatAddr, parseAddr, parsePrefix, type Prefix } from "../net/addr.js";
import type { NodeIPConfigSpec } from "../resources/types/k8s-status.js";
import { podCIDRs, serviceCIDRs } from "./network.js";

export function nodeIPConfigSpec(cfg: MachineConfig): NodeIPConfigSpec {
  let validSubnets = [...(cfg.machine?.kubelet?.nodeIP?.validSubnets ?? [])];
  if (validSubnets.length === 0) {
    validSubnets = serviceCIDRs(cfg).map((cidr) => {
      const p = parsePrefix(cidr);
      if (!p) throw new Error(`error building valid subnets: failed to parse subnet: ${JSON.stringify(cidr)}`);
      return p.ip.length === 16 ? "::/0" : "0.0.0.0/0";
    });
  }
  const excludeSubnets = [...podCIDRs(cfg), ...serviceCIDRs(cfg)];
  for (const device of cfg.machine?.network?.interfaces ?? []) {
    if (device.vip?.ip) excludeSubnets.push(device.vip.ip);
    for (const vlan of device.vlans ?? []) if (vlan.vip?.ip) excludeSubnets.push(vlan.vip.ip);
  }
  // Multi-document virtual IPs: the document name is the address.
  for (const kind of ["Layer2VIPConfig", "HCloudVIPConfig"]) {
    for (const doc of cfg.documentsOfKind(kind)) if (doc.name) excludeSubnets.push(doc.name);
  }
  return { validSubnets, excludeSubnets };
}

/**
 * siderolabs/net FilterIPs: CIDRs in order, a plain one adding the addresses it contains, a `!`-prefixed one
 * removing them again; a bare address counts as a host prefix.
 */
export function filterIPs(addrs: string[], cidrs: string[]): string[] {
  const result: string[] = [];
  for (const text of cidrs) {
    const negative = text.startsWith("!");
    const p: Prefix | undefined = parsePrefix(negative ? text.slice(1) : text);
    if (!p) throw new Error(`error filtering IPs: failed to parse subnet ${JSON.stringify(negative ? text.slice(1) : text)}`);
    for (const a of addrs) {
      const ip = parseAddr(a);
      if (!ip || !contains(p, ip)) continue;
      const canon = formatAddr(ip);
      const at = result.indexOf(canon);
      if (!negative && at < 0) result.push(canon);
      if (negative && at >= 0) result.splice(at, 1);
    }
  }
  return result;
}

/** The node IPs: the filtered addresses, keeping the first IPv4 and the first IPv6 only. */
export function pickNodeIPs(addrs: string[], spec: NodeIPConfigSpec): { ips: string[]; skipped: string[] } {
  const filtered = filterIPs(addrs, [...spec.validSubnets, ...spec.excludeSubnets.map((c) => `!${c}`)]);
  const ips: string[] = [];
  const skipped: string[] = [];
  let v4 = false;
  let v6 = false;
  for (const a of filtered) {
    const is6 = a.includes(":");
    if (is6 ? v6 : v4) skipped.push(a);
    else ips.push(a);
    if (is6) v6 = true;
    else v4 = true;
  }
  return { ips, skipped };
}
