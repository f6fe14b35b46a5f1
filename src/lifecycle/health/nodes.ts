/**
 * Which nodes a health check covers: the lists from the request, or the cluster Members this node
 * knows (first address = the node's internal IP), grouped by machine type.
 */
import { invalidArgument } from "../../machinery/errors.js";
import { parseIP } from "../../machinery/resources/protoenc.js";
import type { Resource } from "../../machinery/resources/resource.js";
import type { MemberSpec } from "../../machinery/resources/types/cluster.js";

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

export function clusterInfoFromMembers(members: Resource[]): ClusterInfo {
  const byType: Record<NodeType, NodeInfo[]> = { init: [], controlplane: [], worker: [] };
  for (const m of members) {
    const spec = m.spec as MemberSpec;
    const ips = (spec.addresses ?? []).map(checkIP);
    if (ips.length === 0) throw new Error(`no IP address found for member: ${m.metadata.id}`);
    const type: NodeType = spec.machineType === "init" || spec.machineType === "controlplane" ? spec.machineType : "worker";
    byType[type].push({ internalIP: ips[0], ips });
  }
  return { nodes: [...byType.init, ...byType.controlplane, ...byType.worker], byType };
}

/** Go's `%q` of a string list, as in `discovered nodes: ["10.5.0.2" "10.5.0.3"]`. */
export { quoteList } from "../../machinery/format.js";
