/**
 * network.HostnameMergeController: the wanted hostname (HostnameSpec `hostname`). The config's
 * `machine.network.hostname` wins; without it we keep whatever the kernel has (upstream would generate
 * `talos-xxx-yyy`, which would rename a developer's machine in local mode).
 */
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import type { Controller } from "../../state/runtime/index.js";
import { HostnameSpecType, type HostnameSpecSpec } from "../../machinery/resources/types/network.js";
import { readSpec } from "../../machinery/resources/read.js";
import { networkSection, NETWORK_NS, type NetworkEnv } from "./shared.js";

export const HOSTNAME_ID = "hostname";

/** An FQDN in the config splits at the first dot, as upstream's HostnameSpec.ParseFQDN. */
export function splitFQDN(fqdn: string): { hostname: string; domainname: string } {
  const dot = fqdn.indexOf(".");
  return dot < 0 ? { hostname: fqdn, domainname: "" } : { hostname: fqdn.slice(0, dot), domainname: fqdn.slice(dot + 1) };
}

export function hostnameMergeController(env: NetworkEnv): Controller {
  return {
    name: "network.HostnameMergeController",
    inputs: [machineConfigInput],
    outputs: [{ type: HostnameSpecType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const configured = networkSection(machineConfig(ctx)).hostname;
      let spec: HostnameSpecSpec;
      if (configured) {
        spec = { ...splitFQDN(configured), layer: "configuration" };
      } else {
        const current = readSpec(ctx, HostnameSpecType, HOSTNAME_ID);
        // Read the kernel once: re-reading would chase our own writes when we manage the hostname.
        spec = current?.layer === "default" ? current : { ...(await env.observe.hostname()).spec, layer: "default" };
      }
      ctx.apply({ namespace: NETWORK_NS, type: HostnameSpecType.type, id: HOSTNAME_ID, spec });
    },
  };
}
