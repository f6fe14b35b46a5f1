/**
 * network.AddressMergeController: the wanted addresses (AddressSpec `<link>/<prefix>`): the loopback
 * default, DHCP leases (network-config namespace) and `machine.network.interfaces[].addresses` (and
 * their VLANs'); for the same id the higher config layer wins.
 */
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import type { Controller } from "../../state/runtime/index.js";
import type { NetworkSection } from "../../machinery/config/index.js";
import { AddressSpecType, type AddressSpecSpec, type ConfigLayerName } from "../../machinery/resources/types/network.js";
import { readAll } from "../../machinery/resources/read.js";
import { mergeByLayer } from "./layers.js";
import { formatPrefix, parsePrefix } from "../../machinery/net/addr.js";
import { networkSection, NETWORK_CONFIG_NS, NETWORK_NS } from "./shared.js";

export function addressSpec(linkName: string, text: string, layer: ConfigLayerName, scope = "global"): { id: string; spec: AddressSpecSpec } | undefined {
  const p = parsePrefix(text);
  if (!p) return undefined;
  const address = formatPrefix(p);
  const spec: AddressSpecSpec = { address, linkName, family: p.ip.length === 4 ? "inet4" : "inet6", scope, flags: "permanent", layer };
  return { id: `${linkName}/${address}`, spec };
}

export const vlanLinkName = (base: string, vlanId: number) => `${base}.${vlanId}`;

/** Addresses the config asks for; unparsable entries are skipped (validation reported them already). */
export function configAddresses(net: NetworkSection): Array<{ id: string; spec: AddressSpecSpec }> {
  const out: Array<{ id: string; spec: AddressSpecSpec } | undefined> = [];
  for (const dev of net.interfaces ?? []) {
    if (dev.ignore || !dev.interface) continue;
    for (const a of [...(dev.addresses ?? []), ...(dev.cidr ? [dev.cidr] : [])]) out.push(addressSpec(dev.interface, a, "configuration"));
    for (const vlan of dev.vlans ?? []) {
      const name = vlanLinkName(dev.interface, vlan.vlanId ?? 0);
      for (const a of [...(vlan.addresses ?? []), ...(vlan.cidr ? [vlan.cidr] : [])]) out.push(addressSpec(name, a, "configuration"));
    }
  }
  return out.filter((x): x is { id: string; spec: AddressSpecSpec } => x !== undefined);
}

export function addressMergeController(): Controller {
  return {
    name: "network.AddressMergeController",
    inputs: [machineConfigInput, { namespace: NETWORK_CONFIG_NS, type: AddressSpecType.type, kind: "weak" }],
    outputs: [{ type: AddressSpecType.type, kind: "shared" }],
    reconcile(ctx) {
      const layered = readAll(ctx, AddressSpecType, NETWORK_CONFIG_NS).map((r) => {
        const spec = r.spec;
        return { id: `${spec.linkName}/${spec.address}`, spec };
      });
      const merged = mergeByLayer([
        addressSpec("lo", "127.0.0.1/8", "default", "host")!,
        ...layered,
        ...configAddresses(networkSection(machineConfig(ctx))),
      ]);
      for (const [id, spec] of merged) ctx.apply({ namespace: NETWORK_NS, type: AddressSpecType.type, id, spec });
      ctx.cleanup(NETWORK_NS, AddressSpecType.type, merged.keys());
    },
  };
}
