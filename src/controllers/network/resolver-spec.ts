/**
 * network.ResolverSpecController: ResolverStatus `resolvers`. When machined owns the network the status
 * is the spec (the resolv.conf we write, etc-files.ts, is rendered from it, as upstream); otherwise it is
 * what the host's /etc/resolv.conf says, read again whenever inotify reports the file changed.
 */
import type { Controller } from "../../state/runtime/index.js";
import { ResolverSpecType, ResolverStatusType, type ResolverStatusSpec } from "../../machinery/resources/types/network.js";
import { readSpec } from "../../machinery/resources/read.js";
import { RESOLVER_ID } from "./resolver-merge.js";
import { NETWORK_NS, type NetworkEnv } from "./shared.js";

export function resolverSpecController(env: NetworkEnv): Controller {
  return {
    name: "network.ResolverSpecController",
    inputs: [{ namespace: NETWORK_NS, type: ResolverSpecType.type, id: RESOLVER_ID, kind: "strong" }],
    outputs: [{ type: ResolverStatusType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const ptr = { namespace: NETWORK_NS, type: ResolverStatusType.type, id: RESOLVER_ID };
      if (!env.target) {
        ctx.apply({ ...ptr, spec: (await env.observe.resolvers()).spec });
        return;
      }
      const spec = readSpec(ctx, ResolverSpecType, RESOLVER_ID);
      if (!spec) {
        ctx.destroy(ptr);
        return;
      }
      const status: ResolverStatusSpec = {
        dnsServers: [...spec.dnsServers],
        ...(spec.nameServers?.length ? { nameServers: spec.nameServers } : {}),
        searchDomains: spec.searchDomains ?? [],
      };
      ctx.apply({ ...ptr, spec: status });
    },
    // Only the host's resolv.conf is observed; a managed status follows the spec alone.
    wakeups: env.target ? undefined : (wake) => env.observe.watch("resolvers", wake),
  };
}
