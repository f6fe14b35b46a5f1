/**
 * The parts of Kubernetes API objects machined reads (the JSON the API serves, field names as in the API),
 * and the kinds it lists and watches. Everything else an object carries is kept but not typed.
 */

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  resourceVersion?: string;
  deletionTimestamp?: string;
  [k: string]: unknown;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  [k: string]: unknown;
}

export interface Condition {
  type: string;
  status: string;
  [k: string]: unknown;
}

export interface NodeObject extends KubeObject {
  spec?: { unschedulable?: boolean; podCIDRs?: string[]; podCIDR?: string; [k: string]: unknown };
  status?: { addresses?: { type: string; address: string }[]; conditions?: Condition[]; [k: string]: unknown };
}

export interface ContainerStatus {
  name?: string;
  state?: { running?: unknown; waiting?: unknown; terminated?: unknown };
  [k: string]: unknown;
}

export interface PodStatus {
  phase?: string;
  conditions?: Condition[];
  containerStatuses?: ContainerStatus[];
  [k: string]: unknown;
}

export interface PodObject extends KubeObject {
  status?: PodStatus;
}

export interface DaemonSetObject extends KubeObject {
  status?: { desiredNumberScheduled?: number; currentNumberScheduled?: number; numberAvailable?: number; numberReady?: number; [k: string]: unknown };
}

export interface DeploymentObject extends KubeObject {
  spec?: { replicas?: number; [k: string]: unknown };
}

export interface EndpointSliceObject extends KubeObject {
  addressType?: string;
  endpoints?: { addresses?: string[]; [k: string]: unknown }[];
}

/** Where a kind lives in the API: `/api/v1` (core) or `/apis/<group>/<version>`, its plural, its scope. */
export interface KubeKind {
  group: string;
  version: string;
  plural: string;
  namespaced: boolean;
}

export const NODES: KubeKind = { group: "", version: "v1", plural: "nodes", namespaced: false };
export const PODS: KubeKind = { group: "", version: "v1", plural: "pods", namespaced: true };
export const DAEMONSETS: KubeKind = { group: "apps", version: "v1", plural: "daemonsets", namespaced: true };
export const DEPLOYMENTS: KubeKind = { group: "apps", version: "v1", plural: "deployments", namespaced: true };
export const ENDPOINTSLICES: KubeKind = { group: "discovery.k8s.io", version: "v1", plural: "endpointslices", namespaced: true };

/** The collection path of a kind: `/api/v1/nodes`, `/apis/apps/v1/namespaces/kube-system/daemonsets`. */
export function collectionPath(kind: KubeKind, namespace?: string): string {
  const base = kind.group === "" ? `/api/${kind.version}` : `/apis/${kind.group}/${kind.version}`;
  const ns = kind.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : "";
  return `${base}${ns}/${kind.plural}`;
}

/** The status of condition `type` ("True", "False", "Unknown"), undefined when the object has none. */
export function conditionStatus(conditions: Condition[] | undefined, type: string): string | undefined {
  return conditions?.find((c) => c.type === type)?.status;
}

/** The label that marks a control plane Node (upstream LabelNodeRoleControlPlane). */
export const LABEL_NODE_ROLE_CONTROL_PLANE = "node-role.kubernetes.io/control-plane";
