/**
 * Per-call context: who is calling (roles), how they connected, and what they asked to be routed to.
 * The transport's admission (admission.ts) decided all of it before the request body was read; the
 * context only hands it to the handler. The cancellation signal is made when a handler first asks for it:
 * most calls never do, and grpc-js reports every finished call as cancelled.
 */
import type * as grpc from "@grpc/grpc-js";
import { ApiError, Code } from "../../machinery/errors.js";
import { admissionOf, type Admission } from "./admission.js";

export interface CallContext {
  method: string;
  roles: ReadonlySet<string>;
  /** True when the connection was accepted while the node was in maintenance mode. */
  maintenance: boolean;
  metadata: grpc.Metadata;
  peer: string;
  /** For a legacy `nodes` request that targets this node: the node string to echo as metadata.hostname. */
  echoHostname?: string;
  /** Aborted when the client cancels or disconnects (and when the call ends). */
  signal: AbortSignal;
}

/** The parts of a grpc-js server call the context needs (every call kind has them). */
export interface SurfaceCall {
  metadata: grpc.Metadata;
  readonly cancelled: boolean;
  once(event: "cancelled", listener: () => void): unknown;
}

export type ContextFactory = (method: string, call: SurfaceCall) => CallContext;

/** One reason for every aborted call signal: aborting with a reason skips building a DOMException per call. */
const CALL_ENDED = new ApiError(Code.Canceled, "call cancelled");

class Context implements CallContext {
  private ac: AbortController | undefined;

  constructor(
    readonly method: string,
    private readonly admission: Admission,
    private readonly call: SurfaceCall,
  ) {}

  get roles(): ReadonlySet<string> {
    return this.admission.conn.roles;
  }

  get maintenance(): boolean {
    return this.admission.conn.maintenance;
  }

  get peer(): string {
    return this.admission.conn.peer;
  }

  get metadata(): grpc.Metadata {
    return this.call.metadata;
  }

  get echoHostname(): string | undefined {
    return this.admission.echoHostname;
  }

  get signal(): AbortSignal {
    if (!this.ac) {
      const ac = new AbortController();
      this.ac = ac;
      if (this.call.cancelled) ac.abort(CALL_ENDED);
      else this.call.once("cancelled", () => ac.abort(CALL_ENDED));
    }
    return this.ac.signal;
  }
}

export function makeContextFactory(): ContextFactory {
  return (method, call) => {
    const admission = admissionOf(call.metadata);
    if (!admission) throw new ApiError(Code.Unavailable, "call was not admitted by the transport");
    return new Context(method, admission, call);
  };
}
