/**
 * Admission of every call, decided when its headers arrive and before any of its body is read: the
 * connection it came on, the caller's roles for the method, node routing, and the call and memory limits.
 * A refused call gets its status at once; nothing of its body is kept.
 *
 * This runs as the first grpc-js server interceptor, which receives grpc-js's own call object. Two of
 * its fields are not in grpc-js's typed API (1.14): `stream`, the HTTP/2 stream (to meter request bytes as
 * they arrive), and `metadata`, the request metadata object later handed to
 * the handler (the key under which the admission is passed on). Without them every call is refused, so a
 * grpc-js upgrade that moves them fails the API tests instead of silently dropping the limits.
 */
import * as grpc from "@grpc/grpc-js";
import type { ServerHttp2Stream } from "node:http2";
import type { ConnectionInfo, ConnectionRegistry } from "./connections.js";
import type { TransportLimits } from "./limits.js";

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

export interface Admission {
  conn: ConnectionInfo;
  /** For a legacy `nodes` request that targets this node: the node string to echo as metadata.hostname. */
  echoHostname?: string;
}

const admitted = new WeakMap<grpc.Metadata, Admission>();

/** The admission of the call whose request metadata this is (undefined: not admitted by the transport). */
export function admissionOf(metadata: grpc.Metadata): Admission | undefined {
  return admitted.get(metadata);
}

export interface AdmissionOptions {
  conns: ConnectionRegistry;
  routing: RoutingView;
  limits: TransportLimits;
  /** Why a read-only call is refused while the node waits for its certificate. */
  waitingReason: string;
}

/** Shared by all connections. */
export interface Budget {
  calls: number;
  inflightBytes: number;
}

interface CallInternals {
  stream?: ServerHttp2Stream;
  metadata?: grpc.Metadata;
}

type Refusal = { code: grpc.status; details: string };

export function admissionInterceptor(o: AdmissionOptions, budget: Budget = { calls: 0, inflightBytes: 0 }): grpc.ServerInterceptor {
  // A connection's calls share its HTTP/2 session: the peer-string lookup is done once per session.
  const bySession = new WeakMap<object, ConnectionInfo>();
  // The call goes on unwrapped (grpc-js's typing asks for a ServerInterceptingCall, but any call object
  // works): wrapping would cost two objects and several closures per call for nothing.
  return ((desc: grpc.ServerMethodDefinition<unknown, unknown>, call: grpc.ServerInterceptingCallInterface) => {
    const { stream, metadata } = call as unknown as CallInternals;
    try {
      if (!stream || !metadata) return refuse(call, { code: grpc.status.INTERNAL, details: "call admission is unavailable (grpc-js internals changed)" });
      const session = stream.session;
      let conn = session && bySession.get(session);
      if (!conn) {
        conn = o.conns.lookup(call.getPeer());
        if (conn && session) bySession.set(session, conn);
      }
      if (!conn) return refuse(call, { code: grpc.status.UNAVAILABLE, details: "connection is not registered (closing)" });
      const method = desc.path;
      if (!conn.allows(method)) {
        return refuse(call, conn.waiting ? { code: grpc.status.FAILED_PRECONDITION, details: o.waitingReason } : { code: grpc.status.PERMISSION_DENIED, details: "not authorized" });
      }
      const route = conn.maintenance ? {} : routeOf(method, metadata, o.routing);
      if ("refusal" in route) return refuse(call, route.refusal);
      if (budget.calls >= o.limits.maxCalls) {
        return refuse(call, { code: grpc.status.RESOURCE_EXHAUSTED, details: `too many calls in progress (limit ${o.limits.maxCalls})` });
      }
      budget.calls++;
      (stream as MeteredStream)[METER] = new RequestMeter(call, stream, conn, budget, o.limits);
      stream.prependListener("data", onMeteredData);
      stream.on("close", onMeteredClose);
      admitted.set(metadata, { conn, echoHostname: route.echoHostname });
      return call;
    } catch (err) {
      return refuse(call, { code: grpc.status.INTERNAL, details: `call admission failed: ${(err as Error)?.message ?? String(err)}` });
    }
  }) as unknown as grpc.ServerInterceptor;
}

/** Apid's routing rules for this node alone: a call for another node, or one-to-many where not allowed, is refused. */
function routeOf(method: string, md: grpc.Metadata, routing: RoutingView): { echoHostname?: string } | { refusal: Refusal } {
  if (md.get("proxyfrom").length) return {};
  const node = md.get("node");
  if (node.length > 1) return { refusal: { code: grpc.status.INVALID_ARGUMENT, details: "node metadata must be single-valued" } };
  if (node.length === 1 && !routing.isLocal(String(node[0]))) return { refusal: { code: grpc.status.PERMISSION_DENIED, details: "no request forwarding" } };
  const raw = md.get("nodes");
  if (raw.length === 0) return {};
  const nodes = raw
    .map(String)
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v !== "");
  if (nodes.length === 0) return {};
  if (!ONE_TO_MANY_PREFIXES.some((p) => method.startsWith(p))) {
    return { refusal: { code: grpc.status.INVALID_ARGUMENT, details: `one-2-many proxying is not supported for method ${method}` } };
  }
  if (nodes.some((n) => !routing.isLocal(n))) return { refusal: { code: grpc.status.PERMISSION_DENIED, details: "no request forwarding" } };
  return { echoHostname: nodes[0] };
}

/**
 * End the call with `r` now. grpc-js then discards whatever body still comes. We do not reset the stream
 * after the status (RST_STREAM NO_ERROR): on Node 20 a stream closed that way while its connection is
 * reset keeps the session, the TLS socket and the descriptor forever; well-behaved clients (grpc-go, so
 * talosctl) stop sending when the status arrives anyway.
 */
function refuse(call: grpc.ServerInterceptingCallInterface, r: Refusal) {
  call.sendStatus({ code: r.code, details: r.details, metadata: null });
  return call;
}

const METER = Symbol("request meter");
type MeteredStream = ServerHttp2Stream & { [METER]?: RequestMeter };

// Listeners shared by every call (the stream is `this`): no closures made per call.
function onMeteredData(this: MeteredStream, chunk: Buffer): void {
  this[METER]?.data(chunk);
}
function onMeteredClose(this: MeteredStream): void {
  this[METER]?.finish();
}

/**
 * Follows the gRPC length prefixes of a call's request as its bytes arrive (ahead of grpc-js's decoder,
 * which buffers a message until it is complete) and reserves each announced message against the
 * connection's and the node's budgets before its body is read. A reservation lasts until the next message
 * starts or the call ends.
 */
class RequestMeter {
  private headerLeft = 5;
  private size = 0;
  private bodyLeft = 0;
  private reserved = 0;
  private done = false;
  private stall: NodeJS.Timeout | undefined = undefined;

  constructor(
    private readonly call: grpc.ServerInterceptingCallInterface,
    private readonly stream: ServerHttp2Stream,
    private readonly conn: ConnectionInfo,
    private readonly budget: Budget,
    private readonly limits: TransportLimits,
  ) {}

  data(chunk: Buffer): void {
    if (this.done) return;
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      if (this.bodyLeft > 0) {
        const take = Math.min(this.bodyLeft, n - i);
        this.bodyLeft -= take;
        i += take;
        continue;
      }
      // Prefix: 1 byte compressed flag, then the 4-byte big-endian message length.
      const byte = chunk[i++];
      if (this.headerLeft < 5) this.size = this.size * 256 + byte;
      if (--this.headerLeft === 0) {
        const size = this.size;
        this.headerLeft = 5;
        this.size = 0;
        if (!this.admit(size)) return;
        this.bodyLeft = size;
      }
    }
    if (this.bodyLeft > 0 || this.headerLeft < 5) {
      if (this.stall) this.stall.refresh();
      else {
        this.stall = setTimeout(() => this.onStall(), this.limits.messageStallMs);
        this.stall.unref();
      }
    } else if (this.stall) {
      clearTimeout(this.stall);
      this.stall = undefined;
    }
  }

  /** The call is over for us (refused or closed): its reservation and its call slot go back. */
  finish(): void {
    if (this.done) return;
    this.done = true;
    this.budget.calls--;
    this.release();
    if (this.stall) clearTimeout(this.stall);
    this.stream.off("data", onMeteredData);
  }

  private onStall(): void {
    this.stall = undefined;
    this.refuse(grpc.status.DEADLINE_EXCEEDED, `request message stalled: no data for ${this.limits.messageStallMs} ms`);
  }

  private admit(size: number): boolean {
    this.release();
    const { maxMessageBytes, maxConnectionInflightBytes, maxInflightBytes } = this.limits;
    if (size > maxMessageBytes) {
      return this.refuse(grpc.status.RESOURCE_EXHAUSTED, `grpc: received message larger than max (${size} vs. ${maxMessageBytes})`);
    }
    if (this.conn.inflightBytes + size > maxConnectionInflightBytes) {
      return this.refuse(
        grpc.status.RESOURCE_EXHAUSTED,
        `request of ${size} bytes refused: this connection already has ${this.conn.inflightBytes} request bytes in flight (limit ${maxConnectionInflightBytes})`,
      );
    }
    if (this.budget.inflightBytes + size > maxInflightBytes) {
      return this.refuse(
        grpc.status.RESOURCE_EXHAUSTED,
        `request of ${size} bytes refused: the node already has ${this.budget.inflightBytes} request bytes in flight (limit ${maxInflightBytes})`,
      );
    }
    this.conn.inflightBytes += size;
    this.budget.inflightBytes += size;
    this.reserved = size;
    return true;
  }

  private release(): void {
    if (this.reserved === 0) return;
    this.conn.inflightBytes -= this.reserved;
    this.budget.inflightBytes -= this.reserved;
    this.reserved = 0;
  }

  private refuse(code: grpc.status, details: string): false {
    this.finish();
    refuse(this.call, { code, details });
    return false;
  }
}
