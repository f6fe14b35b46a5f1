/**
 * The resources that tell what this node knows about its Kubernetes side (`*.kubernetes.talos.dev`): the
 * kubelet's node IPs (NodeIPConfig → NodeIP), the control plane endpoints (Endpoints in `controlplane`), and
 * KubePrism, the node-local API server load balancer (KubePrismEndpoints → KubePrismConfig → KubePrismStatuses).
 * Field names, ids, namespaces and print columns are upstream's (pkg/machinery/resources/k8s).
 */
import {
  EndpointSpecSchema,
  KubePrismConfigSpecSchema,
  KubePrismEndpointsSpecSchema,
  KubePrismStatusesSpecSchema,
  NodeIPConfigSpecSchema,
  NodeIPSpecSchema,
} from "../../api/gen/resource/definitions/k8s/k8s_pb.js";
import { specToProto } from "../protoenc.js";
import type { ResourceType } from "../resource.js";
import { specToYaml } from "../yaml.js";
import { K8S_NS } from "./k8s.js";

/** Upstream's ControlPlaneNamespaceName. */
export { CONTROLPLANE_NS } from "./k8s-controlplane.js";
import { CONTROLPLANE_NS } from "./k8s-controlplane.js";

export const NODE_IP_ID = "kubelet";

/** NodeIPConfigs `kubelet`: which subnets a kubelet node IP may come from. */
export interface NodeIPConfigSpec {
  validSubnets: string[];
  excludeSubnets: string[];
}

export const NodeIPConfigType: ResourceType<NodeIPConfigSpec> = {
  type: "NodeIPConfigs.kubernetes.talos.dev",
  defaultNamespace: K8S_NS,
  // validSubnets is omitempty upstream; excludeSubnets is not.
  toYaml: (s) => specToYaml(s.validSubnets.length > 0 ? s : { excludeSubnets: s.excludeSubnets }),
  toProto: (s) => specToProto(NodeIPConfigSpecSchema, s),
};

/** NodeIPs `kubelet`: at most one IPv4 and one IPv6 address, the kubelet's `--node-ip`. */
export interface NodeIPSpec {
  addresses: string[];
}

export const NodeIPType: ResourceType<NodeIPSpec> = {
  type: "NodeIPs.kubernetes.talos.dev",
  defaultNamespace: K8S_NS,
  toProto: (s) => specToProto(NodeIPSpecSchema, s),
};

/** Endpoints ids in `controlplane`. */
export const ENDPOINT_IDS = {
  /** The API server addresses from the `default/kubernetes` EndpointSlice. */
  apiServer: "kube-apiserver",
  /** The cluster endpoint's host, resolved. */
  kubernetes: "controlplane",
  discovery: "discovery",
} as const;

export interface EndpointSpec {
  addresses: string[];
  hosts: string[];
}

export const EndpointType: ResourceType<EndpointSpec> = {
  type: "Endpoints.kubernetes.talos.dev",
  defaultNamespace: CONTROLPLANE_NS,
  printColumns: [
    { name: "Addresses", jsonPath: "{.addresses}" },
    { name: "Hosts", jsonPath: "{.hosts}" },
  ],
  toProto: (s) => specToProto(EndpointSpecSchema, s),
};

export interface KubePrismEndpoint {
  host: string;
  port: number;
}

export const KUBEPRISM_ENDPOINTS_ID = "k8s-cluster";
export const KUBEPRISM_CONFIG_ID = "k8s-loadbalancer-config";
export const KUBEPRISM_STATUSES_ID = "k8s-loadbalancer";

/** KubePrismEndpoints `k8s-cluster`: every API server this node could reach. */
export interface KubePrismEndpointsSpec {
  endpoints: KubePrismEndpoint[];
}

export const KubePrismEndpointsType: ResourceType<KubePrismEndpointsSpec> = {
  type: "KubePrismEndpoints.kubernetes.talos.dev",
  defaultNamespace: K8S_NS,
  printColumns: [
    { name: "Hosts", jsonPath: "{.endpoints[*].host}" },
    { name: "Ports", jsonPath: "{.endpoints[*].port}" },
  ],
  toProto: (s) => specToProto(KubePrismEndpointsSpecSchema, s),
};

/** KubePrismConfigs `k8s-loadbalancer-config`: where the load balancer listens and what it balances. */
export interface KubePrismConfigSpec {
  host: string;
  port: number;
  endpoints: KubePrismEndpoint[];
}

export const KubePrismConfigType: ResourceType<KubePrismConfigSpec> = {
  type: "KubePrismConfigs.kubernetes.talos.dev",
  defaultNamespace: K8S_NS,
  printColumns: [
    { name: "Host", jsonPath: "{.host}" },
    { name: "Port", jsonPath: "{.port}" },
    { name: "Endpoints", jsonPath: "{.endpoints}" },
  ],
  toProto: (s) => specToProto(KubePrismConfigSpecSchema, s),
};

/** KubePrismStatuses `k8s-loadbalancer`: the listening address and whether any upstream is healthy. */
export interface KubePrismStatusesSpec {
  host: string;
  healthy: boolean;
}

export const KubePrismStatusesType: ResourceType<KubePrismStatusesSpec> = {
  type: "KubePrismStatuses.kubernetes.talos.dev",
  defaultNamespace: K8S_NS,
  printColumns: [
    { name: "HOST", jsonPath: "{.host}" },
    { name: "HEALTHY", jsonPath: "{.healthy}" },
  ],
  toProto: (s) => specToProto(KubePrismStatusesSpecSchema, s),
};

export const K8S_STATUS_TYPES: ResourceType[] = [
  NodeIPConfigType,
  NodeIPType,
  EndpointType,
  KubePrismEndpointsType,
  KubePrismConfigType,
  KubePrismStatusesType,
] as ResourceType[];
