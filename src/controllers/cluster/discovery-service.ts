/**
 * cluster.DiscoveryServiceController: the discovery service registry (discovery.talos.dev or another
 * DiscoveryServiceConfig endpoint). This build has no client for it: the machines it runs on have no internet,
 * and the service is an outside dependency no test here could reach. So while a service is configured it
 * reports no affiliates and says why once per configuration (in machined's log, `talosctl logs machined`)
 * instead of failing and retrying forever; members then come from the Kubernetes registry, and nodes still join
 * through the control-plane endpoint. DiscoveryConfig keeps showing the service as
 * configured, because that is what the machine config says.
 */
import { pointer, readSpec } from "../../machinery/resources/read.js";
import { DiscoveryConfigType } from "../../machinery/resources/types/discovery.js";
import type { Controller } from "../../state/runtime/index.js";
import { DISCOVERY_CONFIG_ID } from "./discovery-config.js";

export const DISCOVERY_SERVICE_UNAVAILABLE = "discovery service registry is not available in this build (no internet access); it is not contacted";

export function discoveryServiceController(): Controller {
  let said = "";
  return {
    name: "cluster.DiscoveryServiceController",
    inputs: [{ ...pointer(DiscoveryConfigType, DISCOVERY_CONFIG_ID), kind: "weak" }],
    outputs: [],
    reconcile(ctx) {
      const endpoints = readSpec(ctx, DiscoveryConfigType, DISCOVERY_CONFIG_ID)?.serviceEndpoints ?? [];
      const what = endpoints.map((e) => e.endpoint).join(",");
      if (what && what !== said) {
        ctx.log(DISCOVERY_SERVICE_UNAVAILABLE, {
          endpoints: endpoints.map((e) => `${e.name}=${e.endpoint}`),
          using: readSpec(ctx, DiscoveryConfigType, DISCOVERY_CONFIG_ID)?.registryKubernetesEnabled ? "kubernetes registry" : "no registry",
        });
      }
      said = what;
    },
  };
}
