/**
 * What one client, and all of them together, may make the API hold before and while it is authorised.
 * Every limit refuses with a gRPC status (or, for sockets, a close) instead of queueing without bound.
 */
import { DEFAULT_LISTENER_LIMITS } from "../../host/tls-listener.js";
import type { SocketLimits } from "./listener.js";

export interface TransportLimits extends SocketLimits {
  /** Largest request or response message: apid's constants.GRPCMaxMessageSize. Checked from the 5-byte length prefix. */
  maxMessageBytes: number;
  /** Request bytes one connection may have announced and not yet handed over: one largest message and some headroom. */
  maxConnectionInflightBytes: number;
  /** The same over all connections. */
  maxInflightBytes: number;
  /** Calls in progress over all connections. */
  maxCalls: number;
  /** HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS: calls in progress on one connection. */
  maxConcurrentStreams: number;
  /** A connection without calls for this long gets a GOAWAY (and its socket goes after closeGraceMs). */
  idleTimeoutMs: number;
  /** HTTP/2 PING interval and timeout, so a peer that vanished under a long stream is noticed. */
  keepaliveTimeMs: number;
  keepaliveTimeoutMs: number;
  /** A request message whose bytes stop arriving for this long is refused and its reservation freed. */
  messageStallMs: number;
}

const MiB = 1024 * 1024;

const BUILT_IN: TransportLimits = {
  ...DEFAULT_LISTENER_LIMITS,
  maxMessageBytes: 32 * MiB,
  maxConnectionInflightBytes: 33 * MiB,
  maxInflightBytes: 64 * MiB,
  maxCalls: 1024,
  maxConcurrentStreams: 100,
  idleTimeoutMs: 120_000,
  keepaliveTimeMs: 60_000,
  keepaliveTimeoutMs: 20_000,
  messageStallMs: 30_000,
};

/** The limits every ApiServer starts from (it can override them one by one). */
export const DEFAULT_LIMITS: TransportLimits = { ...BUILT_IN };

/**
 * Change the defaults for the ApiServers made after this call in this process. Only for processes that
 * exist to be tested: the transport fuzz suite and the call bench run their node in a child process with
 * short timeouts and small caps, which the entry wiring does not take as options.
 */
export function setDefaultLimits(overrides: Partial<TransportLimits>): void {
  Object.assign(DEFAULT_LIMITS, BUILT_IN, overrides);
}
