/**
 * cluster.ConfigController: DiscoveryConfig (`config`/`cluster`) from `cluster.discovery`, as upstream: the
 * registries count only while discovery is enabled; the service registry's endpoint becomes `host:port` (443 for
 * https, 80 for http) with the cluster secret as its encryption key and the cluster id.
 */
import { DiscoveryConfigType, type DiscoveryConfigSpec } from "../../machinery/resources/types/discovery.js";
import type { Controller } from "../../state/runtime/index.js";
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";

export const DISCOVERY_CONFIG_ID = "cluster";
export const DEFAULT_DISCOVERY_ENDPOINT = "https://discovery.talos.dev/";

export function discoveryConfigController(): Controller {
  const ptr = { namespace: "config", type: DiscoveryConfigType.type, id: DISCOVERY_CONFIG_ID };
  return {
    name: "cluster.ConfigController",
    inputs: [machineConfigInput],
    outputs: [{ type: DiscoveryConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cluster = machineConfig(ctx)?.v1alpha1()?.cluster;
      if (!cluster) {
        ctx.destroy(ptr);
        return;
      }
      const d = cluster.discovery;
      const enabled = d?.enabled === true;
      const spec: DiscoveryConfigSpec = {
        discoveryEnabled: enabled,
        registryKubernetesEnabled: enabled && d?.registries?.kubernetes?.disabled !== true,
        registryServiceEnabled: enabled && d?.registries?.service?.disabled !== true,
        serviceEndpoint: "",
        serviceEncryptionKey: null,
        serviceClusterID: "",
      };
      if (spec.registryServiceEnabled) {
        const raw = d?.registries?.service?.endpoint || DEFAULT_DISCOVERY_ENDPOINT;
        let u: URL;
        try {
          u = new URL(raw);
        } catch {
          throw new Error(`cluster.discovery.registries.service.endpoint: invalid URL ${JSON.stringify(raw)}`);
        }
        const port = u.port || (u.protocol === "http:" ? "80" : "443");
        const host = u.hostname.startsWith("[") ? u.hostname : u.hostname.includes(":") ? `[${u.hostname}]` : u.hostname;
        spec.serviceEndpoint = `${host}:${port}`;
        if (u.protocol === "http:") spec.serviceEndpointInsecure = true;
        spec.serviceEncryptionKey = cluster.secret ?? "";
        spec.serviceClusterID = cluster.id ?? "";
      }
      ctx.apply({ ...ptr, spec });
    },
  };
}
