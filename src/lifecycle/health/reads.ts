/**
 * What the cluster checks read from one node: upstream asks each node through apid with the node in the
 * call context; here each node is a NodeReads. This node's own are read from its state (localNodeReads);
 * another node's come from its API through request forwarding (the API layer builds those, see
 * src/api/handlers/health-remote.ts). A read that fails throws the failure as upstream's client would
 * print it (NodeReadError carries the gRPC code where one applies); the checks add the node and what was read.
 */
import { Code } from "../../machinery/errors.js";
import type { Pointer } from "../../machinery/resources/resource.js";
import { pointer, read, readAll, readSpec } from "../../machinery/resources/read.js";
import { VolumeStatusType } from "../../machinery/resources/types/block.js";
import { EtcdMemberType } from "../../machinery/resources/types/etcd.js";
import { K8S_NS, StaticPodStatusType } from "../../machinery/resources/types/k8s.js";
import { MachineStatusType, ServiceType } from "../../machinery/resources/types/runtime.js";
import { DiagnosticType } from "../../machinery/resources/types/security.js";
import type { State } from "../../state/types.js";

export interface EtcdMemberView {
  /** Hex, 16 digits. */
  id: string;
  hostname: string;
  peerUrls: string[];
  isLearner: boolean;
}

export interface ServiceView {
  running: boolean;
  healthy: boolean;
}

export interface EphemeralView {
  size: number;
  location: string;
}

/** Every read may be cancelled through its signal (the check's attempt ended). */
export interface NodeReads {
  /** The platform mode of MachineService/Version ("container", "metal", ...). */
  platformMode(signal?: AbortSignal): Promise<string>;
  /** A service's state, undefined when the node does not run it. */
  service(id: string, signal?: AbortSignal): Promise<ServiceView | undefined>;
  etcdMembers(signal?: AbortSignal): Promise<EtcdMemberView[]>;
  /** MemTotal of /proc/meminfo in KiB. */
  memTotalKiB(signal?: AbortSignal): Promise<number>;
  /** The EPHEMERAL VolumeStatus; throws when it does not exist. */
  ephemeral(signal?: AbortSignal): Promise<EphemeralView>;
  /** The messages of the active Diagnostics. */
  diagnostics(signal?: AbortSignal): Promise<string[]>;
  /** MachineStatus stage name ("unknown" without a MachineStatus). */
  stage(signal?: AbortSignal): Promise<string>;
  /** IDs of the StaticPodStatus resources. */
  staticPodIds(signal?: AbortSignal): Promise<string[]>;
}

/** A read that failed with a gRPC status (message: upstream's `rpc error: code = ... desc = ...`). */
export class NodeReadError extends Error {
  constructor(
    readonly code: Code,
    message: string,
  ) {
    super(message);
    this.name = "NodeReadError";
  }
}

export function readCode(err: unknown): Code | undefined {
  return err instanceof NodeReadError ? err.code : undefined;
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** COSI's not-found text for a pointer, as a Get of a missing resource reports it. */
export function missing(p: Pointer): string {
  return `resource ${p.type}(${p.namespace}/${p.id}@undefined) doesn't exist`;
}

export interface LocalReadsOptions {
  state: Pick<State, "get" | "list">;
  platformMode: string;
  memTotalKiB: () => Promise<number>;
  /** The local etcd member list (EtcdClient); without it the EtcdMember resource is used. */
  etcdMembers?: () => Promise<EtcdMemberView[]>;
}

/** This node's reads, from its own state. */
export function localNodeReads(o: LocalReadsOptions): NodeReads {
  const { state } = o;
  return {
    platformMode: async () => o.platformMode,
    service: async (id) => {
      const svc = readSpec(state, ServiceType, id);
      return svc ? { running: svc.running, healthy: svc.healthy } : undefined;
    },
    etcdMembers: async () => {
      if (o.etcdMembers) return o.etcdMembers();
      const local = read(state, EtcdMemberType, "local");
      if (!local) throw new Error("etcd is not running or not healthy on this node yet");
      return [{ id: local.spec.memberID, hostname: "", peerUrls: [], isLearner: false }];
    },
    memTotalKiB: () => o.memTotalKiB(),
    ephemeral: async () => {
      const ptr = pointer(VolumeStatusType, "EPHEMERAL");
      const vs = readSpec(state, VolumeStatusType, ptr.id);
      if (!vs) throw new NodeReadError(Code.NotFound, missing(ptr));
      return { size: vs.size ?? 0, location: vs.location ?? "" };
    },
    diagnostics: async () => readAll(state, DiagnosticType).map((r) => r.spec.message),
    stage: async () => readSpec(state, MachineStatusType, "machine")?.stage ?? "unknown",
    staticPodIds: async () => state.list(K8S_NS, StaticPodStatusType.type).map((r) => r.metadata.id),
  };
}

/** The text of a node that cannot be asked. */
export function unreachable(node: string, why: string): string {
  return `node ${JSON.stringify(node)} is not reachable: ${why}`;
}

/** A node that cannot be asked (e.g. this node holds no client certificate to forward with): every read fails saying why. */
export function unreachableNodeReads(node: string, why: string): NodeReads {
  const fail = async (): Promise<never> => {
    throw new NodeReadError(Code.Unavailable, unreachable(node, why));
  };
  return {
    platformMode: fail,
    service: fail,
    etcdMembers: fail,
    memTotalKiB: fail,
    ephemeral: fail,
    diagnostics: fail,
    stage: fail,
    staticPodIds: fail,
  };
}
