/**
 * Which nodes a health check covers: the lists from the request, or the cluster Members this node
 * knows (first address = the node's internal IP), grouped by machine type, or (the last resort, as
 * upstream) the Kubernetes Nodes, control planes by their role label.
 */
import { invalidArgument } from "../../machinery/errors.js";
import { parseIP } from "../../machinery/resources/protoenc.js";
import type { Resource } from "../../machinery/resources/resource.js";
import type { MemberSpec } from "../../machinery/resources/types/cluster.js";
import { LABEL_NODE_ROLE_CONTROL_PLANE, type NodeObject } from "../../machinery/kubernetes/objects.js";
import { formatAddr, parseAddr } from "../../machinery/net/addr.js";

export type NodeType = "init" | "controlplane" | "worker";

export interface NodeInfo {
  internalIP: string;
  ips: string[];
}

export interface ClusterInfo {
  nodes: NodeInfo[];
  byType: Record<NodeType, NodeInfo[]>;
}

function checkIP(s: string): string {
  if (!parseIP(s)) throw invalidArgument(`ParseAddr(${JSON.stringify(s)}): unable to parse IP`);
  return s;
}

export function clusterInfoFromLists(controlPlanes: string[], workers: string[]): ClusterInfo {
  const info = (ip: string): NodeInfo => ({ internalIP: checkIP(ip), ips: [ip] });
  const cp = controlPlanes.map(info);
  const w = workers.map(info);
  return { nodes: [...cp, ...w], byType: { init: [], controlplane: cp, worker: w } };
}

export function clusterInfoFromMembers(members: Resource<MemberSpec>[]): ClusterInfo {
  const byType: Record<NodeType, NodeInfo[]> = { init: [], controlplane: [], worker: [] };
  for (const m of members) {
    const spec = m.spec;
    const ips = (spec.addresses ?? []).map(checkIP);
    if (ips.length === 0) throw new Error(`no IP address found for member: ${m.metadata.id}`);
    const type: NodeType = spec.machineType === "init" || spec.machineType === "controlplane" ? spec.machineType : "worker";
    byType[type].push({ internalIP: ips[0], ips });
  }
  return { nodes: [...byType.init, ...byType.controlplane, ...byType.worker], byType };
}

/** A Node's InternalIP (last one wins, as upstream) and its internal + external addresses. */
export function nodeInfo(node: NodeObject): NodeInfo {
  let internalIP = "";
  const ips: string[] = [];
  for (const a of node.status?.addresses ?? []) {
    if (a.type !== "InternalIP" && a.type !== "ExternalIP") continue;
    const ip = parseAddr(a.address);
    if (!ip) throw new Error(`ParseAddr(${JSON.stringify(a.address)}): unable to parse IP`);
    const text = formatAddr(ip);
    if (a.type === "InternalIP") internalIP = text;
    ips.push(text);
  }
  return { internalIP, ips };
}

export function clusterInfoFromKubernetesNodes(nodes: NodeObject[]): ClusterInfo {
  const byType: Record<NodeType, NodeInfo[]> = { init: [], controlplane: [], worker: [] };
  const all: NodeInfo[] = [];
  for (const node of nodes) {
    const info = nodeInfo(node);
    const cp = Object.hasOwn(node.metadata?.labels ?? {}, LABEL_NODE_ROLE_CONTROL_PLANE);
    byType[cp ? "controlplane" : "worker"].push(info);
    all.push(info);
  }
  return { nodes: all, byType };
}

/** Go's `%q` of a string list, as in `discovered nodes: ["10.5.0.2" "10.5.0.3"]`. */
export { quoteList } from "../../machinery/format.js";
