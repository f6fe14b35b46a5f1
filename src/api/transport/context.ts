/**
 * Per-call context: who is calling (roles), how they connected, and what they asked to be routed to.
 * Built once per call by the transport, after authorisation and node routing have been checked.
 */
import type * as grpc from "@grpc/grpc-js";
import { isAllowed } from "../../machinery/role.js";
import { ApiError, Code, permissionDenied } from "../../machinery/errors.js";
import type { ConnectionRegistry } from "./connections.js";

export interface CallContext {
  method: string;
  roles: ReadonlySet<string>;
  /** True when the connection was accepted while the node was in maintenance mode. */
  maintenance: boolean;
  metadata: grpc.Metadata;
  peer: string;
  /** For a legacy `nodes` request that targets this node: the node string to echo as metadata.hostname. */
  echoHostname?: string;
  /** Aborted when the client cancels or disconnects. */
  signal: AbortSignal;
}

/** The parts of a grpc-js server call the context needs (every call kind has them). */
export interface SurfaceCall {
  getPeer(): string;
  metadata: grpc.Metadata;
  once(event: "cancelled" | "close", listener: () => void): unknown;
}

export type ContextFactory = (method: string, call: SurfaceCall) => CallContext;

/** Methods that may be sent one-to-many with `nodes` metadata (apid's director). */
const ONE_TO_MANY_PREFIXES = [
  "/machine.MachineService/",
  "/cluster.ClusterService/",
  "/inspect.InspectService/",
  "/storage.StorageService/",
  "/time.TimeService/",
];

export interface RoutingView {
  /** Names and addresses that refer to this node. */
  isLocal(node: string): boolean;
}

export function makeContextFactory(conns: ConnectionRegistry, routing: RoutingView, waitingReason = "node is waiting for its API certificate"): ContextFactory {
  return (method, call) => {
    const peer = call.getPeer();
    const conn = conns.lookup(peer);
    if (!conn) throw new ApiError(Code.Unavailable, "connection is not registered (closing)");
    const roles = conn.roles;
    if (!isAllowed(method, roles)) {
      if (conn.waiting) throw new ApiError(Code.FailedPrecondition, waitingReason);
      throw permissionDenied();
    }
    const md = call.metadata;
    let echoHostname: string | undefined;
    if (!conn.maintenance && !md.get("proxyfrom").length) {
      const node = md.get("node").map(String);
      const nodes = md
        .get("nodes")
        .map(String)
        .flatMap((v: string) => v.split(","))
        .map((v: string) => v.trim())
        .filter((v: string) => v !== "");
      if (node.length > 1) throw new ApiError(Code.InvalidArgument, "node metadata must be single-valued");
      if (node.length === 1 && !routing.isLocal(node[0])) throw permissionDenied("no request forwarding");
      if (nodes.length > 0) {
        if (!ONE_TO_MANY_PREFIXES.some((p) => method.startsWith(p))) {
          throw new ApiError(Code.InvalidArgument, `one-2-many proxying is not supported for method ${method}`);
        }
        const remote = nodes.filter((n: string) => !routing.isLocal(n));
        if (remote.length > 0) throw permissionDenied("no request forwarding");
        echoHostname = nodes[0];
      }
    }
    const ac = new AbortController();
    const abort = () => ac.abort();
    call.once("cancelled", abort);
    call.once("close", abort);
    return { method, roles, maintenance: conn.maintenance, metadata: md, peer, echoHostname, signal: ac.signal };
  };
}
