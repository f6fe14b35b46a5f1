/**
 * cluster.ConfigController: DiscoveryConfig (`config`/`cluster`) from the machine config. Both layouts count, as
 * in Talos 1.14: the discovery services are the legacy v1alpha1 one (`cluster.discovery` enabled and its service
 * registry not disabled; named `legacy`) or else the DiscoveryServiceConfig documents; each endpoint becomes
 * `host:port` (443 for https, 80 for http). With a service, the encryption key and cluster id come from
 * `cluster.secret`/`cluster.id` or else the DiscoveryIdentityConfig document, and one of them is required.
 * The Kubernetes registry is only the v1alpha1 switch (`enabled` and not `registries.kubernetes.disabled`).
 * `discoveryEnabled` keeps its v1.13 meaning (`cluster.discovery.enabled`).
 */
import type { MachineConfig } from "../../machinery/config/machineconfig.js";
import { DiscoveryConfigType, type DiscoveryConfigSpec, type DiscoveryServiceEndpoint } from "../../machinery/resources/types/discovery.js";
import type { Controller } from "../../state/runtime/index.js";
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";

export const DISCOVERY_CONFIG_ID = "cluster";
export const DEFAULT_DISCOVERY_ENDPOINT = "https://discovery.talos.dev/";

/** `host:port` and whether it is plain http, from a discovery service URL; `where` names the field for errors. */
export function normalizeEndpoint(raw: string, where: string): { endpoint: string; insecure: boolean } {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new Error(`${where}: invalid URL ${JSON.stringify(raw)}`);
  }
  const port = u.port || (u.protocol === "http:" ? "80" : "443");
  const host = u.hostname.startsWith("[") ? u.hostname : u.hostname.includes(":") ? `[${u.hostname}]` : u.hostname;
  return { endpoint: `${host}:${port}`, insecure: u.protocol === "http:" };
}

function serviceEndpoints(cfg: MachineConfig): DiscoveryServiceEndpoint[] {
  const d = cfg.cluster?.discovery;
  if (d?.enabled === true && d.registries?.service?.disabled !== true) {
    const raw = d.registries?.service?.endpoint || DEFAULT_DISCOVERY_ENDPOINT;
    return [{ name: "legacy", ...normalizeEndpoint(raw, "cluster.discovery.registries.service.endpoint") }];
  }
  return cfg.documentsOfKind("DiscoveryServiceConfig").map((doc) => {
    const raw = typeof doc.data.endpoint === "string" ? doc.data.endpoint : "";
    const name = doc.name ?? (typeof doc.data.name === "string" ? doc.data.name : "");
    return { name, ...normalizeEndpoint(raw, `DiscoveryServiceConfig ${JSON.stringify(name)}: endpoint`) };
  });
}

function identity(cfg: MachineConfig): { clusterID: string; clusterSecret: string } | undefined {
  const c = cfg.cluster;
  if (c?.id || c?.secret) return { clusterID: c.id ?? "", clusterSecret: c.secret ?? "" };
  const doc = cfg.document("DiscoveryIdentityConfig");
  if (!doc) return undefined;
  const s = (v: unknown) => (typeof v === "string" ? v : "");
  return { clusterID: s(doc.data.clusterID), clusterSecret: s(doc.data.clusterSecret) };
}

export function discoverySpec(cfg: MachineConfig): DiscoveryConfigSpec {
  const d = cfg.cluster?.discovery;
  const enabled = d?.enabled === true;
  const endpoints = serviceEndpoints(cfg);
  const spec: DiscoveryConfigSpec = {
    discoveryEnabled: enabled,
    registryKubernetesEnabled: enabled && d?.registries?.kubernetes?.disabled !== true,
    registryServiceEnabled: endpoints.length > 0,
    serviceEndpoint: endpoints[0]?.endpoint ?? "",
    serviceEncryptionKey: null,
    serviceClusterID: "",
    serviceEndpoints: endpoints,
  };
  if (endpoints.length > 0) {
    if (endpoints[0].insecure) spec.serviceEndpointInsecure = true;
    const id = identity(cfg);
    if (!id) throw new Error("cluster identity is required when discovery service is configured (cluster.id/cluster.secret or a DiscoveryIdentityConfig document)");
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(id.clusterSecret)) throw new Error("cluster secret: illegal base64 data (the discovery encryption key)");
    spec.serviceEncryptionKey = id.clusterSecret;
    spec.serviceClusterID = id.clusterID;
  }
  return spec;
}

export function discoveryConfigController(): Controller {
  const ptr = { namespace: "config", type: DiscoveryConfigType.type, id: DISCOVERY_CONFIG_ID };
  return {
    name: "cluster.ConfigController",
    inputs: [machineConfigInput],
    outputs: [{ type: DiscoveryConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!cfg?.v1alpha1()?.cluster) {
        ctx.destroy(ptr);
        return;
      }
      ctx.apply({ ...ptr, spec: discoverySpec(cfg) });
    },
  };
}

/** Whether this node announces itself (a local affiliate): v1.13's switch, or any registry in use (v1.14). */
export function announces(spec: DiscoveryConfigSpec | undefined): boolean {
  return !!spec && (spec.discoveryEnabled || spec.registryKubernetesEnabled || spec.serviceEndpoints.length > 0);
}
