/**
 * Outgoing mutual-TLS connections (the API forwarding calls to other nodes), with the whole life of every
 * socket owned here, as the listener does for incoming ones.
 *
 * Why not leave dialing to a gRPC library: grpc-js has no connect or handshake deadline, so a target that
 * accepts TCP and never finishes TLS would hold its socket (and every call waiting on it) forever. Here the
 * TCP connect and the TLS handshake share one deadline, every socket is counted from dial to close, and the
 * sweep destroys sockets whose connection the kernel already tore down while nothing above noticed (the
 * Node 20 node:http2 case tls-listener.ts describes).
 */
import * as tls from "node:tls";
import { isIP } from "node:net";

export interface TlsDialOptions {
  host: string;
  port: number;
  /** CAs the server certificate must chain to (PEM); its name must match `host` (an IP SAN for an address). */
  ca: string[];
  /** Our client certificate chain and key (PEM). */
  certPem: string;
  keyPem: string;
  /** TCP connect plus TLS handshake. */
  timeoutMs: number;
  /** TCP keepalive idle time: a peer that vanished under a quiet connection is noticed. */
  keepAliveMs: number;
}

export type DialPhase = "dial" | "handshake" | "timeout";

export class DialError extends Error {
  constructor(
    message: string,
    readonly phase: DialPhase,
    /** The system error code of a failed TCP connect (ECONNREFUSED, EHOSTUNREACH, ENOTFOUND, ...). */
    readonly code?: string,
  ) {
    super(message);
    this.name = "DialError";
  }
}

export class TlsDialer {
  private readonly open = new Set<tls.TLSSocket>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly sweepIntervalMs = 5_000) {}

  /** Sockets dialled and not yet closed (in handshake or open). */
  get size(): number {
    return this.open.size;
  }

  dial(o: TlsDialOptions): Promise<tls.TLSSocket> {
    return new Promise((resolve, reject) => {
      let tcpUp = false;
      let settled = false;
      const socket = tls.connect({
        host: o.host,
        port: o.port,
        ca: o.ca,
        cert: o.certPem,
        key: o.keyPem,
        // As upstream's clients (siderolabs/crypto tls.New): TLS 1.3 only.
        minVersion: "TLSv1.3",
        ALPNProtocols: ["h2"],
        // SNI carries names only; an address is matched against the IP SANs.
        servername: isIP(o.host) ? undefined : o.host,
      });
      this.track(socket);
      const fail = (err: DialError) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.destroy();
        reject(err);
      };
      const timer = setTimeout(() => fail(new DialError(`no ${tcpUp ? "TLS handshake" : "TCP connection"} within ${o.timeoutMs} ms`, "timeout")), o.timeoutMs);
      timer.unref();
      socket.once("connect", () => {
        tcpUp = true;
        socket.setKeepAlive(true, o.keepAliveMs);
        socket.setNoDelay(true);
      });
      socket.on("error", (err: NodeJS.ErrnoException) => {
        if (!settled) fail(tcpUp ? new DialError(err.message, "handshake") : new DialError(err.message, "dial", err.code));
        else socket.destroy();
      });
      socket.once("close", () => fail(new DialError(tcpUp ? "connection closed during the TLS handshake" : "connection closed", tcpUp ? "handshake" : "dial")));
      socket.once("secureConnect", () => {
        if (socket.alpnProtocol !== "h2") return fail(new DialError(`server did not agree to HTTP/2 (ALPN ${String(socket.alpnProtocol)})`, "handshake"));
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(socket);
      });
    });
  }

  /** Destroy every socket (shutdown). */
  destroyAll(): void {
    for (const s of this.open) s.destroy();
  }

  private track(s: tls.TLSSocket): void {
    this.open.add(s);
    s.once("close", () => {
      this.open.delete(s);
      if (this.open.size === 0 && this.sweeper) {
        clearInterval(this.sweeper);
        this.sweeper = undefined;
      }
    });
    if (!this.sweeper) {
      this.sweeper = setInterval(() => this.sweep(), this.sweepIntervalMs);
      this.sweeper.unref();
    }
  }

  /** getpeername(2) fails (ENOTCONN) on a socket whose connection is gone: such a socket is destroyed. */
  private sweep(): void {
    for (const s of this.open) {
      if (s.connecting) continue;
      const handle = (s as unknown as { _handle?: { getpeername?: (out: object) => number } | null })._handle;
      if (handle && typeof handle.getpeername === "function" && handle.getpeername({}) !== 0) s.destroy();
    }
  }
}
