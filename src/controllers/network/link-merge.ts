/**
 * network.LinkMergeController: the wanted links (LinkSpec `<name>`): `lo` up by default, and every
 * configured (not ignored) interface up with its MTU, plus its VLANs as logical links.
 * Bonds, bridges and wireguard links are not created (not supported yet).
 */
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import type { Controller } from "../../state/runtime/index.js";
import type { NetworkSection } from "../../machinery/config/index.js";
import { LinkSpecType, type LinkSpecSpec } from "../../machinery/resources/types/network.js";
import { vlanLinkName } from "./address-merge.js";
import { mergeByLayer } from "./layers.js";
import { networkSection, NETWORK_NS } from "./shared.js";

/** Upstream leaves the type of physical links unset, which Talos prints as the zero LinkType. */
const UNSET_TYPE = "netrom";

export function configLinks(net: NetworkSection): Array<{ id: string; spec: LinkSpecSpec }> {
  const out: Array<{ id: string; spec: LinkSpecSpec }> = [];
  for (const dev of net.interfaces ?? []) {
    if (dev.ignore || !dev.interface) continue;
    out.push({
      id: dev.interface,
      spec: { name: dev.interface, logical: false, up: true, mtu: dev.mtu ?? 0, kind: "", type: UNSET_TYPE, layer: "configuration" },
    });
    for (const vlan of dev.vlans ?? []) {
      const name = vlanLinkName(dev.interface, vlan.vlanId ?? 0);
      out.push({
        id: name,
        spec: {
          name, logical: true, up: true, mtu: vlan.mtu ?? 0, kind: "vlan", type: "ether", parentName: dev.interface,
          vlan: { vlanID: vlan.vlanId ?? 0, vlanProtocol: "802.1q" }, layer: "configuration",
        },
      });
    }
  }
  return out;
}

export function linkMergeController(): Controller {
  return {
    name: "network.LinkMergeController",
    inputs: [machineConfigInput],
    outputs: [{ type: LinkSpecType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const lo: LinkSpecSpec = { name: "lo", logical: false, up: true, mtu: 0, kind: "", type: UNSET_TYPE, layer: "default" };
      const merged = mergeByLayer([{ id: "lo", spec: lo }, ...configLinks(networkSection(machineConfig(ctx)))]);
      for (const [id, spec] of merged) ctx.apply({ namespace: NETWORK_NS, type: LinkSpecType.type, id, spec });
      ctx.cleanup(NETWORK_NS, LinkSpecType.type, merged.keys());
    },
  };
}
