/**
 * Early network, applied before the API listens, so the maintenance API is reachable without a config: a static
 * address from the boot entry, or else a DHCP lease (the agent's own client, src/host/net/dhcp4-client.ts) on the
 * first ethernet link:
 *
 *   machined.ip=10.0.2.15/24 machined.gw=10.0.2.2 machined.dns=10.0.2.3[,…] [machined.iface=eth0]
 *
 * (the QEMU user-network values; `make image NET_CMDLINE=...` sets others). Without machined.iface the first
 * ethernet link (not lo) is used. Addresses from the machine config are layered on top later by the network
 * controllers; these stay (upstream's "cmdline" layer).
 */
import { addAddress, replaceRoute, setLinkUp, type NetTarget } from "../host/net/apply.js";
import { firstEthernet } from "../host/net/sysfs.js";
import { dhcp4Lease } from "../host/net/dhcp4-client.js";

export interface CmdlineNet {
  iface?: string;
  address: string;
  gateway?: string;
  dns: string[];
}

export function parseCmdlineNet(cmdline: string): CmdlineNet | undefined {
  const words = new Map<string, string>();
  for (const w of cmdline.trim().split(/\s+/)) {
    const i = w.indexOf("=");
    if (i > 0) words.set(w.slice(0, i), w.slice(i + 1));
  }
  const address = words.get("machined.ip");
  if (!address || !/^[0-9a-fA-F:.]+\/\d+$/.test(address)) return undefined;
  return {
    iface: words.get("machined.iface") || undefined,
    address,
    gateway: words.get("machined.gw") || undefined,
    dns: (words.get("machined.dns") ?? "").split(",").filter(Boolean),
  };
}

/** Brings lo and the link up and adds the address and default route; returns the link used. */
export async function applyCmdlineNet(t: NetTarget, net: CmdlineNet, waitMs = 20_000): Promise<string> {
  await setLinkUp(t, "lo", true);
  let iface = net.iface;
  const deadline = Date.now() + waitMs;
  // the NIC driver was just loaded by coldplug; its link can take a moment to register
  while (!iface) {
    iface = firstEthernet();
    if (iface || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  if (!iface) throw new Error("no ethernet link found for machined.ip");
  await setLinkUp(t, iface, true);
  await addAddress(t, iface, net.address);
  if (net.gateway) {
    const family = net.gateway.includes(":") ? "inet6" : "inet4";
    await replaceRoute(t, { family, dst: "", gateway: net.gateway, src: "", outLinkName: iface, table: "main", priority: 1024, scope: "global", type: "unicast", protocol: "static" });
  }
  return iface;
}

/**
 * No static address on the cmdline: a DHCP lease on the first ethernet link, applied like a static one (the
 * "cmdline" layer). The lease is not renewed here: a network that serves the machines' boot addresses hands out
 * long leases (make cluster's dnsmasq: infinite); interfaces the config marks `dhcp: true` are renewed by the
 * network controllers. Undefined when no server answered.
 */
export async function bootDhcp(t: NetTarget, o: { waitMs?: number; timeoutMs?: number } = {}): Promise<{ iface: string; net: CmdlineNet; seconds: number } | undefined> {
  await setLinkUp(t, "lo", true);
  const deadline = Date.now() + (o.waitMs ?? 20_000);
  let iface = firstEthernet();
  while (!iface && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    iface = firstEthernet();
  }
  if (!iface) throw new Error("no ethernet link found for DHCP");
  const lease = await dhcp4Lease(t, iface, { timeoutMs: o.timeoutMs ?? 30_000 });
  if (!lease) return undefined;
  const net: CmdlineNet = { iface, address: lease.address, gateway: lease.routers[0], dns: lease.dnsServers };
  await applyCmdlineNet(t, net);
  return { iface, net, seconds: lease.leaseSeconds };
}
