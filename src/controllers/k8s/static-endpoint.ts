/**
 * k8s.StaticEndpointController: Endpoints `controlplane`/`controlplane`, the cluster endpoint's host resolved
 * (all addresses of both families); `hosts` names the host unless it is the one address itself. Resolved again
 * when the config changes; a name that does not resolve is an error (retried with backoff), as upstream.
 */
import { lookupHost, type HostLookup } from "../../host/lookup.js";
import { canonicalAddr } from "../../machinery/net/addr.js";
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { CONTROLPLANE_NS, ENDPOINT_IDS, EndpointType } from "../../machinery/resources/types/k8s-status.js";
import type { Controller } from "../../state/runtime/index.js";

export interface StaticEndpointOptions {
  lookup?: HostLookup;
}

export function staticEndpointController(opts: StaticEndpointOptions = {}): Controller {
  const lookup = opts.lookup ?? lookupHost;
  return {
    name: "k8s.StaticEndpointController",
    inputs: [machineConfigInput],
    outputs: [{ type: EndpointType.type, kind: "shared" }],
    async reconcile(ctx) {
      const cfg = machineConfig(ctx);
      const keep: string[] = [];
      const endpoint = cfg?.cluster ? cfg.endpoint() : undefined;
      if (endpoint) {
        let host: string;
        try {
          host = new URL(endpoint).hostname.replace(/^\[|\]$/g, "");
        } catch {
          throw new Error(`error resolving cluster endpoint: invalid URL ${JSON.stringify(endpoint)}`);
        }
        let addrs: string[];
        try {
          addrs = (await lookup(host)).map(canonicalAddr);
        } catch (e) {
          throw new Error(`error resolving ${JSON.stringify(host)}: ${(e as Error).message}`);
        }
        const hosts = addrs.length === 1 && addrs[0] === host ? [] : [host];
        ctx.apply({ namespace: CONTROLPLANE_NS, type: EndpointType.type, id: ENDPOINT_IDS.kubernetes, spec: { addresses: addrs, hosts } });
        keep.push(ENDPOINT_IDS.kubernetes);
      }
      ctx.cleanup(CONTROLPLANE_NS, EndpointType.type, keep);
    },
  };
}
