/**
 * network.RouteMergeController: the wanted routes (RouteSpec, ids as RouteStatus ids) from DHCP leases
 * (network-config namespace) and `machine.network.interfaces[].routes` (and their VLANs'), normalised
 * like upstream: `0.0.0.0/0` means the default route, metric 0 means 1024, gateway-less routes are
 * link-scoped.
 */
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import type { Controller } from "../../state/runtime/index.js";
import type { NetworkSection } from "../../machinery/config/index.js";
import { RouteSpecType, type ConfigLayerName, type RouteSpecSpec } from "../../machinery/resources/types/network.js";
import { routeId } from "../../host/net/routes.js";
import { readAll } from "../../machinery/resources/read.js";
import { vlanLinkName } from "./address-merge.js";
import { mergeByLayer } from "./layers.js";
import { formatAddr, formatPrefix, isLoopback, isMulticast, isUnspecified, parseAddr, parsePrefix } from "../../machinery/net/addr.js";
import { networkSection, NETWORK_CONFIG_NS, NETWORK_NS } from "./shared.js";

export const DEFAULT_ROUTE_METRIC = 1024;

export interface RouteInput {
  network?: string;
  gateway?: string;
  source?: string;
  metric?: number;
  mtu?: number;
}

/** One config (or DHCP) route → RouteSpec; undefined when an address does not parse. */
export function routeSpec(linkName: string, r: RouteInput, layer: ConfigLayerName, protocol = "static"): { id: string; spec: RouteSpecSpec } | undefined {
  const dst = r.network ? parsePrefix(r.network) : undefined;
  const gw = r.gateway ? parseAddr(r.gateway) : undefined;
  const src = r.source ? parseAddr(r.source) : undefined;
  if ((r.network && !dst) || (r.gateway && !gw) || (r.source && !src)) return undefined;
  // An all-zero destination/gateway/source means "none" and only tells the family (upstream Normalize).
  let family: "inet4" | "inet6" | undefined;
  const none = (ip: Uint8Array | undefined, bits?: number) => {
    if (!ip || !isUnspecified(ip) || (bits !== undefined && bits !== 0)) return false;
    family = ip.length === 4 ? "inet4" : "inet6";
    return true;
  };
  const dstText = !dst || none(dst.ip, dst.bits) ? "" : formatPrefix(dst);
  const gwText = !gw || none(gw) ? "" : formatAddr(gw);
  const srcText = !src || none(src) ? "" : formatAddr(src);
  if (gwText && gw!.length === 16) family = "inet6";
  else if (dstText && dst!.ip.length === 16) family = "inet6";
  family ??= "inet4";
  const scope = !gwText && dstText ? "link" : dst && isLoopback(dst.ip) ? "host" : "global";
  const spec: RouteSpecSpec = {
    family,
    dst: dstText,
    src: srcText,
    gateway: gwText,
    outLinkName: linkName,
    table: "main",
    priority: r.metric || DEFAULT_ROUTE_METRIC,
    scope,
    type: dst && isMulticast(dst.ip) ? "multicast" : "unicast",
    flags: "",
    protocol,
    layer,
    ...(r.mtu ? { mtu: r.mtu } : {}),
  };
  return { id: routeId({ ...spec, priority: spec.priority ?? 0 }), spec };
}

export function configRoutes(net: NetworkSection): Array<{ id: string; spec: RouteSpecSpec }> {
  const out: Array<{ id: string; spec: RouteSpecSpec } | undefined> = [];
  for (const dev of net.interfaces ?? []) {
    if (dev.ignore || !dev.interface) continue;
    for (const r of dev.routes ?? []) out.push(routeSpec(dev.interface, r, "configuration"));
    for (const vlan of dev.vlans ?? []) {
      for (const r of vlan.routes ?? []) out.push(routeSpec(vlanLinkName(dev.interface, vlan.vlanId ?? 0), r, "configuration"));
    }
  }
  return out.filter((x): x is { id: string; spec: RouteSpecSpec } => x !== undefined);
}

export function routeMergeController(): Controller {
  return {
    name: "network.RouteMergeController",
    inputs: [machineConfigInput, { namespace: NETWORK_CONFIG_NS, type: RouteSpecType.type, kind: "weak" }],
    outputs: [{ type: RouteSpecType.type, kind: "shared" }],
    reconcile(ctx) {
      const layered = readAll(ctx, RouteSpecType, NETWORK_CONFIG_NS).map((r) => {
        const spec = r.spec;
        return { id: routeId({ ...spec, priority: spec.priority ?? 0 }), spec };
      });
      const merged = mergeByLayer([...layered, ...configRoutes(networkSection(machineConfig(ctx)))]);
      for (const [id, spec] of merged) ctx.apply({ namespace: NETWORK_NS, type: RouteSpecType.type, id, spec });
      ctx.cleanup(NETWORK_NS, RouteSpecType.type, merged.keys());
    },
  };
}
