/**
 * Another node's reads for the cluster health check, asked from its own API one-to-one through the
 * server's Forwarder (as upstream's server-side check asks each node through apid with the node in the
 * call context): MachineService Version, ServiceList, EtcdMemberList and Memory, and COSI State Get/List
 * (the resources' YAML spec) for MachineStatus, Diagnostics, StaticPodStatuses and the EPHEMERAL
 * VolumeStatus. Each call carries the HealthCheck caller's roles as talos-role (the target serves it with
 * them, over this node's impersonator certificate) and has its own deadline, so an unreachable node fails
 * its read, not the whole check run. A failure reads as upstream's client prints it
 * (`rpc error: code = Unavailable desc = ...`).
 */
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import { parse } from "yaml";
import * as m from "../../machinery/api/gen/machine/machine_pb.js";
import { GetRequestSchema, GetResponseSchema, ListRequestSchema, ListResponseSchema } from "../../machinery/api/gen/cosi/state_pb.js";
import type { Resource as WireResource } from "../../machinery/api/gen/cosi/resource_pb.js";
import { Code } from "../../machinery/errors.js";
import type { Pointer } from "../../machinery/resources/resource.js";
import { pointer } from "../../machinery/resources/read.js";
import { VolumeStatusType } from "../../machinery/resources/types/block.js";
import { K8S_NS, StaticPodStatusType } from "../../machinery/resources/types/k8s.js";
import { MachineStatusType } from "../../machinery/resources/types/runtime.js";
import { DiagnosticType } from "../../machinery/resources/types/security.js";
import { NodeReadError, type NodeReads } from "../../lifecycle/health/reads.js";
import { outgoingMetadata } from "../forward/forwarder.js";
import { goStatusText } from "../forward/frames.js";
import { one2oneStream, one2oneUnary, statusOf, type Targets } from "../forward/one2many.js";
import { formatMemberId } from "../../supervisor/etcd/ops.js";

/** Per read: a node that does not answer fails its check's attempt without holding the others. */
export const DEFAULT_READ_TIMEOUT_MS = 10_000;

export interface RemoteReadsOptions {
  /** The HealthCheck caller's roles, sent as talos-role. */
  roles: ReadonlySet<string>;
  /** The HealthCheck call's signal: its end cancels every read. */
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Sent as proxyfrom (tells the target to serve the call itself). */
  authority?: string;
}

const DEADLINE = "context deadline exceeded";

/** The status a read ended with, as upstream's client error text. */
function readError(err: unknown): NodeReadError {
  if (err instanceof NodeReadError) return err;
  const s = statusOf(err);
  return new NodeReadError(s.code, goStatusText(s));
}

/** Why a read's signal aborted: its deadline (or the check attempt's) or a cancelled call. */
function abortError(reason: unknown): NodeReadError {
  const text = reason instanceof Error ? reason.message : String(reason);
  if (text.includes("deadline exceeded")) return new NodeReadError(Code.DeadlineExceeded, goStatusText({ code: Code.DeadlineExceeded, details: DEADLINE }));
  return new NodeReadError(Code.Canceled, goStatusText({ code: Code.Canceled, details: "context canceled" }));
}

export function remoteNodeReads(targets: Targets, node: string, o: RemoteReadsOptions): NodeReads {
  const timeoutMs = o.timeoutMs ?? DEFAULT_READ_TIMEOUT_MS;

  /** Runs one call on the node, bounded by the read's deadline and cancelled with either signal. */
  async function bounded<T>(signal: AbortSignal | undefined, run: (call: { deadline: number; signal: AbortSignal; metadata: grpc.Metadata }) => Promise<T>): Promise<T> {
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(new Error(DEADLINE)), timeoutMs);
    const cleanups: (() => void)[] = [() => clearTimeout(timer)];
    for (const s of [signal, o.signal]) {
      if (!s) continue;
      if (s.aborted) ac.abort(s.reason);
      const on = () => ac.abort(s.reason);
      s.addEventListener("abort", on, { once: true });
      cleanups.push(() => s.removeEventListener("abort", on));
    }
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(abortError(ac.signal.reason));
      if (ac.signal.aborted) onAbort();
      else ac.signal.addEventListener("abort", onAbort, { once: true });
    });
    aborted.catch(() => {});
    const work = run({ deadline: Date.now() + timeoutMs, signal: ac.signal, metadata: outgoingMetadata(new grpc.Metadata(), o.roles, o.authority) });
    // A call that ends after the read gave up must not leave an unhandled rejection.
    work.catch(() => {});
    try {
      return await Promise.race([work, aborted]);
    } catch (err) {
      throw readError(err);
    } finally {
      for (const c of cleanups) c();
      if (onAbort) ac.signal.removeEventListener("abort", onAbort);
    }
  }

  async function unary<I extends DescMessage, O extends DescMessage>(path: string, input: I, req: MessageInitShape<I>, output: O, signal?: AbortSignal): Promise<MessageShape<O>> {
    const reply = await bounded(signal, (c) => one2oneUnary(targets, node, { path, ...c, requests: [toBinary(input, create(input, req))] }));
    try {
      return fromBinary(output, reply);
    } catch (err) {
      throw new NodeReadError(Code.Internal, goStatusText({ code: Code.Internal, details: `grpc: failed to unmarshal the received message: ${(err as Error).message}` }));
    }
  }

  const machine = <I extends DescMessage, O extends DescMessage>(method: string, input: I, req: MessageInitShape<I>, output: O, signal?: AbortSignal) =>
    unary(`/machine.MachineService/${method}`, input, req, output, signal);

  async function cosiGet(p: Pointer, signal?: AbortSignal): Promise<WireResource | undefined> {
    return (await unary("/cosi.resource.State/Get", GetRequestSchema, { namespace: p.namespace, type: p.type, id: p.id }, GetResponseSchema, signal)).resource;
  }

  async function cosiList(namespace: string, type: string, signal?: AbortSignal): Promise<WireResource[]> {
    const out: WireResource[] = [];
    await bounded(signal, (c) =>
      one2oneStream(targets, node, { path: "/cosi.resource.State/List", ...c, requests: [toBinary(ListRequestSchema, create(ListRequestSchema, { namespace, type }))] }, async (msg) => {
        const r = fromBinary(ListResponseSchema, msg).resource;
        if (r) out.push(r);
      }),
    );
    return out;
  }

  const spec = <T>(r: WireResource | undefined): Partial<T> => {
    const y = r?.spec?.yamlSpec;
    if (!y) return {};
    const v = parse(y) as unknown;
    return v && typeof v === "object" ? (v as Partial<T>) : {};
  };

  return {
    platformMode: async (signal) => (await machine("Version", EmptySchema, {}, m.VersionResponseSchema, signal)).messages[0]?.platform?.mode ?? "",
    service: async (id, signal) => {
      const svc = (await machine("ServiceList", EmptySchema, {}, m.ServiceListResponseSchema, signal)).messages[0]?.services.find((s) => s.id === id);
      if (!svc) return undefined;
      // Upstream reads the state of the last event.
      const events = svc.events?.events ?? [];
      const state = events.length > 0 ? events[events.length - 1].state : svc.state;
      return { running: state === "Running", healthy: svc.health?.healthy ?? false };
    },
    etcdMembers: async (signal) => {
      const msg = (await machine("EtcdMemberList", m.EtcdMemberListRequestSchema, {}, m.EtcdMemberListResponseSchema, signal)).messages[0];
      if (!msg) throw new Error(`node ${JSON.stringify(node)}: no messages returned`);
      return msg.members.map((x) => ({ id: formatMemberId(x.id), hostname: x.hostname, peerUrls: x.peerUrls, isLearner: x.isLearner }));
    },
    memTotalKiB: async (signal) => Number((await machine("Memory", EmptySchema, {}, m.MemoryResponseSchema, signal)).messages[0]?.meminfo?.memtotal ?? 0n),
    ephemeral: async (signal) => {
      const s = spec<{ size: number; location: string }>(await cosiGet(pointer(VolumeStatusType, "EPHEMERAL"), signal));
      return { size: Number(s.size ?? 0), location: String(s.location ?? "") };
    },
    diagnostics: async (signal) => (await cosiList(DiagnosticType.defaultNamespace, DiagnosticType.type, signal)).map((r) => String(spec<{ message: string }>(r).message ?? "")),
    stage: async (signal) => {
      try {
        return String(spec<{ stage: string }>(await cosiGet(pointer(MachineStatusType, "machine"), signal)).stage ?? "unknown");
      } catch (err) {
        // Not there yet: the node has not reported a stage (upstream keeps waiting for it).
        if (err instanceof NodeReadError && err.code === Code.NotFound) return "unknown";
        throw err;
      }
    },
    staticPodIds: async (signal) => (await cosiList(K8S_NS, StaticPodStatusType.type, signal)).map((r) => r.metadata?.id ?? ""),
  };
}
