/**
 * network.ResolverMergeController: the wanted DNS resolvers (ResolverSpec `resolvers`), merged by layer
 * like upstream: defaults (1.1.1.1, 8.8.8.8, search = our domain) < DHCP (network-config namespace)
 * < `machine.network.nameservers` / `searchDomains`.
 */
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import type { Controller } from "../../state/runtime/index.js";
import { HostnameStatusType, ResolverSpecType, type NameServer, type ResolverSpecSpec } from "../../machinery/resources/types/network.js";
import { readAll, readSpec } from "../../machinery/resources/read.js";
import { HOSTNAME_ID } from "./hostname-merge.js";
import { layerRank } from "./layers.js";
import { canonicalAddr, parseAddr } from "../../machinery/net/addr.js";
import { networkSection, NETWORK_CONFIG_NS, NETWORK_NS } from "./shared.js";

export const RESOLVER_ID = "resolvers";
export const DEFAULT_RESOLVERS = ["1.1.1.1", "8.8.8.8"];

const plain = (addr: string): NameServer => ({ addr: canonicalAddr(addr), protocol: "Do53", tlsServerName: "" });
const isV4 = (ns: NameServer) => parseAddr(ns.addr)?.length === 4;

/** New unique domains from src go first, in order; existing ones keep their place (upstream mergeSearchDomains). */
function mergeSearchDomains(dst: string[], src: string[] = []): string[] {
  const out = [...dst];
  let at = 0;
  for (const d of src) if (!out.includes(d)) out.splice(at++, 0, d);
  return out;
}

/** A lower layer's servers of one family survive when the higher layer brings only the other family. */
function mergeNameServers(dst: NameServer[], src: NameServer[]): NameServer[] {
  if (dst.length === 0) return [...src];
  const keepV4 = dst.some(isV4) && !src.some(isV4);
  const keepV6 = dst.some((n) => !isV4(n)) && !src.some((n) => !isV4(n));
  return [...src, ...dst.filter((n) => (keepV4 && isV4(n)) || (keepV6 && !isV4(n)))];
}

export function resolverMergeController(): Controller {
  return {
    name: "network.ResolverMergeController",
    inputs: [
      machineConfigInput,
      { namespace: NETWORK_NS, type: HostnameStatusType.type, id: HOSTNAME_ID, kind: "weak" },
      { namespace: NETWORK_CONFIG_NS, type: ResolverSpecType.type, kind: "weak" },
    ],
    outputs: [{ type: ResolverSpecType.type, kind: "shared" }],
    reconcile(ctx) {
      const net = networkSection(machineConfig(ctx));
      const hostname = readSpec(ctx, HostnameStatusType, HOSTNAME_ID);
      let servers = DEFAULT_RESOLVERS.map(plain);
      let search = !net.disableSearchDomain && hostname?.domainname ? [hostname.domainname] : [];
      let layer: ResolverSpecSpec["layer"] = "default";

      const operators = readAll(ctx, ResolverSpecType, NETWORK_CONFIG_NS)
        .map((r) => r.spec)
        .filter((s) => layerRank(s.layer) < layerRank("configuration"))
        .sort((a, b) => layerRank(a.layer) - layerRank(b.layer));
      for (const s of operators) {
        servers = mergeNameServers(servers, s.nameServers ?? s.dnsServers.map(plain));
        search = mergeSearchDomains(search, s.searchDomains);
        layer = s.layer;
      }

      const configured = (net.nameservers ?? []).filter((a) => parseAddr(a));
      if (configured.length > 0 || net.searchDomains !== undefined) {
        if (configured.length > 0) servers = configured.map(plain);
        // Explicit search domains (even an empty list) replace what DHCP or the default brought.
        if (net.searchDomains !== undefined) search = [...net.searchDomains];
        layer = "configuration";
      }

      const spec: ResolverSpecSpec = {
        dnsServers: servers.map((s) => s.addr),
        nameServers: servers,
        layer,
        ...(search.length ? { searchDomains: search } : {}),
        ...(net.searchDomains !== undefined ? { searchDomainsOverridden: true } : {}),
      };
      ctx.apply({ namespace: NETWORK_NS, type: ResolverSpecType.type, id: RESOLVER_ID, spec });
      ctx.cleanup(NETWORK_NS, ResolverSpecType.type, [RESOLVER_ID]);
    },
  };
}
