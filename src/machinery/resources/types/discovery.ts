/**
 * Cluster discovery of the `cluster`, `cluster-raw` and `config` namespaces: Affiliates (the local one and the merged
 * remote ones in `cluster`, id = node id; what each registry reported in `cluster-raw`, id = `<registry>/<node id>`)
 * and DiscoveryConfig (`cluster`, sensitive: it holds the encryption key).
 */
import { AffiliateSpecSchema, ConfigSpecSchema } from "../../api/gen/resource/definitions/cluster/cluster_pb.js";
import type { ResourceType } from "../resource.js";
import { CLUSTER_NS } from "./cluster.js";
import type { MachineTypeName } from "./config.js";
import { defineType } from "./define.js";

/** Affiliates as each registry reported them, before AffiliateMergeController merges them by node id. */
export const CLUSTER_RAW_NS = "cluster-raw";

export interface AffiliateSpec {
  nodeId: string;
  addresses: string[];
  hostname: string;
  nodename?: string;
  operatingSystem: string;
  machineType: MachineTypeName;
  /** KubeSpan details; omitted (Go's zero struct with omitempty) while KubeSpan is off. */
  kubespan?: { publicKey: string; address: string; additionalAddresses: string[]; endpoints: string[]; excludeAdvertisedNetworks: string[] };
  controlPlane?: { port: number };
}

export const AffiliateType = defineType<AffiliateSpec>({
  type: "Affiliates.cluster.talos.dev",
  namespace: CLUSTER_NS,
  printColumns: [
    { name: "Hostname", jsonPath: "{.hostname}" },
    { name: "Machine Type", jsonPath: "{.machineType}" },
    { name: "Addresses", jsonPath: "{.addresses}" },
  ],
  schema: AffiliateSpecSchema,
  keys: ["nodeId", "addresses", "hostname", "nodename", "operatingSystem", "machineType", "kubespan", "controlPlane"],
  omitempty: ["nodename", "kubespan", "controlPlane"],
  proto: { fields: { kubespan: "kube_span", "controlPlane.port": "api_server_port" } },
});

export interface DiscoveryConfigSpec {
  discoveryEnabled: boolean;
  registryKubernetesEnabled: boolean;
  registryServiceEnabled: boolean;
  serviceEndpoint: string;
  serviceEndpointInsecure?: boolean;
  /** The cluster secret's bytes; Go prints []byte as base64 text. */
  serviceEncryptionKey: string | null;
  serviceClusterID: string;
  /** One per discovery service (DiscoveryServiceConfig documents, or the legacy v1alpha1 one named `legacy`). */
  serviceEndpoints: DiscoveryServiceEndpoint[];
}

export interface DiscoveryServiceEndpoint {
  name: string;
  /** `host:port`. */
  endpoint: string;
  insecure: boolean;
}

export const DiscoveryConfigType = defineType<DiscoveryConfigSpec>({
  type: "DiscoveryConfigs.cluster.talos.dev",
  namespace: "config",
  sensitive: true,
  schema: ConfigSpecSchema,
  keys: ["discoveryEnabled", "registryKubernetesEnabled", "registryServiceEnabled", "serviceEndpoint", "serviceEndpointInsecure", "serviceEncryptionKey", "serviceClusterID", "serviceEndpoints"],
  omitempty: ["serviceEndpointInsecure"],
});

export const DISCOVERY_TYPES = [AffiliateType, DiscoveryConfigType] as ResourceType[];
