/**
 * The API's listening socket: TCP accept, TLS termination and the whole life of every socket.
 *
 * We own the lifecycle instead of trusting the layers above (node:http2, grpc-js) to free what they were
 * handed: every accepted TCP socket is tracked from accept to 'close', capped in number, bounded in time
 * until its handshake completes, and destroyed on every path (reset during or right after the handshake,
 * handshake failure or timeout, certificate refusal, a peer that never closes after we ended our side,
 * shutdown). The TLS socket and its TCP socket always go down together, whichever closes first; an
 * HTTP/2 session built on the TLS socket closes with it.
 *
 * Client certificates are refused with the TLS alert a client can read (see tls-alert.ts), and the peer
 * address is captured at accept time, so reports name it even after the socket is gone.
 */
import * as net from "node:net";
import * as tls from "node:tls";
import { constants as cryptoConstants, type X509Certificate } from "node:crypto";
import { serverTrafficSecret, tls13AlertRecord, TlsAlert, type TlsAlertCode } from "./tls-alert.js";

/** Where a listener is bound (the port when 0 was asked for). */
export type ListenAddress = net.AddressInfo;

export interface TlsServerPolicy {
  certPem: string;
  keyPem: string;
  /** Ask for a client certificate and verify it against these CAs; without them no certificate is asked. */
  clientCAs?: string[];
  /** A further check of a verified client certificate: a returned reason refuses it (bad_certificate). */
  checkClient?: (cert: X509Certificate) => string | undefined;
}

export interface AcceptedTls<T> {
  socket: tls.TLSSocket;
  /** "<address>:<port>" as captured at accept time (grpc-js getPeer() format). */
  peer: string;
  /** The tag of the policy the connection was accepted under. */
  tag: T;
  /** The verified client certificate (mutual TLS only). */
  clientCertificate?: X509Certificate;
}

export type RefusalKind = "limit" | "handshake" | "timeout" | "certificate";

export interface Refusal {
  kind: RefusalKind;
  reason: string;
  peer: string;
  /** The TLS alert sent for a certificate refusal. */
  alert?: TlsAlertCode;
}

export interface TlsListenerOptions<T> {
  /** Open TCP connections (in handshake, serving, or being refused) above which new ones are closed at once. */
  maxConnections: number;
  /** Time from accept to a completed handshake. */
  handshakeTimeoutMs: number;
  /** Once our side of a connection has ended (the HTTP/2 session closed it), how long the peer has to close. */
  closeGraceMs: number;
  /** How long a refused client has to read its alert before the socket is destroyed. */
  refuseGraceMs: number;
  /** TCP keepalive idle time: finds peers that vanished without a FIN or RST. */
  keepAliveMs: number;
  /** How often every open socket is checked for a connection the kernel already closed (see sweep()). */
  sweepIntervalMs: number;
  onAccept(conn: AcceptedTls<T>): void;
  onRefused?(r: Refusal): void;
  /** The listening socket failed to accept (e.g. EMFILE); it keeps listening. */
  onAcceptError?(err: Error): void;
  /** A socket whose connection was already gone was destroyed by the sweep. */
  onReaped?(peer: string): void;
}

export const DEFAULT_LISTENER_LIMITS = {
  maxConnections: 256,
  handshakeTimeoutMs: 10_000,
  closeGraceMs: 5_000,
  refuseGraceMs: 1_000,
  keepAliveMs: 60_000,
  sweepIntervalMs: 5_000,
};

/**
 * OpenSSL 3 sends two NewSessionTicket records right after every full TLS 1.3 handshake (its default
 * num_tickets, which Node never changes; with SSL_OP_NO_TICKET they are stateful, and they are sent even
 * to clients that offer no PSK modes). They are the server's records 0 and 1 under its application key,
 * so our alert is record 2.
 */
const RECORDS_BEFORE_ALERT = 2;
/** After an orderly end, how long a peer gets to close its side before the socket is destroyed. */
const END_GRACE_MS = 5_000;

interface Tracked<T> {
  raw: net.Socket;
  peer: string;
  tag: T;
  policy: TlsServerPolicy;
  state: "handshake" | "open" | "refusing";
  tls?: tls.TLSSocket;
  /** SERVER_TRAFFIC_SECRET_0, kept only until the certificate decision (mutual TLS). */
  secret?: Buffer;
  timer?: NodeJS.Timeout;
}

interface Current<T> {
  server: tls.Server;
  policy: TlsServerPolicy;
  tag: T;
}

export class TlsListener<T> {
  private readonly netServer: net.Server;
  private readonly tracked = new Set<Tracked<T>>();
  private readonly byRaw = new WeakMap<net.Socket, Tracked<T>>();
  private current!: Current<T>;
  private closing = false;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    policy: TlsServerPolicy,
    tag: T,
    private readonly opts: TlsListenerOptions<T>,
  ) {
    this.setPolicy(policy, tag);
    this.netServer = net.createServer({ noDelay: true }, (raw) => this.onTcp(raw));
    // Without a listener an accept failure (EMFILE, ENFILE) would be an uncaught 'error' event.
    this.netServer.on("error", (err) => {
      if (this.netServer.listening) this.opts.onAcceptError?.(err);
    });
  }

  listen(host: string, port: number): Promise<ListenAddress> {
    return new Promise((resolve, reject) => {
      const failed = (err: Error) => reject(err);
      this.netServer.once("error", failed);
      this.netServer.listen({ host, port, exclusive: true }, () => {
        this.netServer.off("error", failed);
        this.sweeper = setInterval(() => this.sweep(), this.opts.sweepIntervalMs);
        this.sweeper.unref();
        resolve(this.netServer.address() as net.AddressInfo);
      });
    });
  }

  /** Policy (and tag) for new connections; open connections keep the one they were accepted under. */
  setPolicy(policy: TlsServerPolicy, tag: T): void {
    const mutual = !!policy.clientCAs;
    const server = tls.createServer({
      ...contextOptions(policy),
      requestCert: mutual,
      // We refuse ourselves, after the handshake, so that the refusal carries an alert (see tls-alert.ts).
      rejectUnauthorized: false,
      ALPNProtocols: ["h2"],
    });
    server.on("secureConnection", (s) => this.onSecure(s));
    server.on("tlsClientError", (err, s) => this.onTlsError(err, s));
    if (mutual) server.on("keylog", (line, s) => this.onKeylog(line, s));
    this.current = { server, policy, tag };
  }

  /** Replace the server certificate of the current policy (renewal) without dropping connections. */
  rotate(certPem: string, keyPem: string): void {
    const policy = { ...this.current.policy, certPem, keyPem };
    // A whole new context: setSecureContext does not keep the previous one's version floor or options.
    this.current.server.setSecureContext(contextOptions(policy));
    this.current = { ...this.current, policy };
  }

  /** TCP connections currently open (every state). */
  get size(): number {
    return this.tracked.size;
  }

  /** Destroy, after `graceMs`, the serving connections whose tag matches (e.g. those accepted in maintenance). */
  /**
   * Closes the matching connections after graceMs: an orderly end first, so bytes still queued (the last reply) reach
   * the peer before its EOF, then a destroy END_GRACE_MS later for a peer that never finishes its side.
   */
  destroyWhere(match: (tag: T) => boolean, graceMs: number): void {
    for (const t of this.tracked) {
      if (t.state !== "open" || !match(t.tag)) continue;
      setTimeout(() => {
        (t.tls ?? t.raw).end();
        setTimeout(() => this.destroy(t), END_GRACE_MS).unref();
      }, graceMs).unref();
    }
  }

  destroyAll(): void {
    for (const t of this.tracked) this.destroy(t);
  }

  close(): Promise<void> {
    this.closing = true;
    clearInterval(this.sweeper);
    return new Promise((resolve) => {
      this.netServer.close(() => resolve());
      this.destroyAll();
    });
  }

  private onTcp(raw: net.Socket): void {
    // A socket reset before we got here has no address left; nothing to track.
    if (raw.remoteAddress === undefined) {
      raw.destroy();
      return;
    }
    const peer = `${raw.remoteAddress}:${raw.remotePort}`;
    raw.on("error", () => raw.destroy());
    // At the cap, first let go of connections that are already dead, then count again.
    if (this.tracked.size >= this.opts.maxConnections) this.sweep();
    if (this.closing || this.tracked.size >= this.opts.maxConnections) {
      raw.destroy();
      this.opts.onRefused?.({ kind: "limit", reason: `too many connections (limit ${this.opts.maxConnections})`, peer });
      return;
    }
    const { server, policy, tag } = this.current;
    const t: Tracked<T> = { raw, peer, tag, policy, state: "handshake" };
    this.tracked.add(t);
    this.byRaw.set(raw, t);
    raw.once("close", () => {
      this.tracked.delete(t);
      clearTimeout(t.timer);
      t.secret = undefined;
      t.tls?.destroy();
    });
    raw.setKeepAlive(true, this.opts.keepAliveMs);
    // Our handshake deadline (node:tls has its own, 120 s, which never comes first).
    t.timer = setTimeout(() => {
      if (t.state !== "handshake" || raw.destroyed) return;
      this.opts.onRefused?.({ kind: "timeout", reason: `no TLS handshake within ${this.opts.handshakeTimeoutMs} ms`, peer });
      raw.destroy();
    }, this.opts.handshakeTimeoutMs);
    t.timer.unref();
    server.emit("connection", raw);
  }

  /** The TCP socket under a TLS socket made by tls.Server (Node keeps it as `_parent`). */
  private lookup(s: tls.TLSSocket): Tracked<T> | undefined {
    const parent = (s as unknown as { _parent?: net.Socket })._parent;
    return parent ? this.byRaw.get(parent) : undefined;
  }

  private onKeylog(line: Buffer, s: tls.TLSSocket): void {
    const secret = serverTrafficSecret(line);
    if (!secret) return;
    const t = this.lookup(s);
    if (t && t.state === "handshake") t.secret = secret;
  }

  private onTlsError(err: Error, s: tls.TLSSocket): void {
    const t = this.lookup(s);
    s.destroy();
    if (t) {
      t.raw.destroy();
      this.opts.onRefused?.({ kind: "handshake", reason: err.message, peer: t.peer });
    }
  }

  private onSecure(s: tls.TLSSocket): void {
    const t = this.lookup(s);
    if (!t || t.state !== "handshake" || t.raw.destroyed) {
      s.destroy();
      return;
    }
    clearTimeout(t.timer);
    t.timer = undefined;
    t.tls = s;
    s.on("error", () => s.destroy());
    // Whichever of the two closes first, the other follows.
    s.once("close", () => t.raw.destroy());
    let clientCertificate: X509Certificate | undefined;
    if (t.policy.clientCAs) {
      const verdict = verifyClient(s, t.policy);
      if ("alert" in verdict) {
        this.refuse(t, s, verdict.alert, verdict.reason);
        return;
      }
      clientCertificate = verdict.cert;
    }
    t.secret = undefined;
    t.state = "open";
    // When our side has ended (the HTTP/2 session sent GOAWAY and closed), the peer gets a grace period to
    // close too; a peer that never does would otherwise keep the socket forever.
    s.once("finish", () => {
      t.timer = setTimeout(() => this.destroy(t), this.opts.closeGraceMs);
      t.timer.unref();
    });
    this.opts.onAccept({ socket: s, peer: t.peer, tag: t.tag, clientCertificate });
  }

  /**
   * Send `alert` and close. The alert goes out after OpenSSL's session tickets (flushed right after the
   * handshake callback returns), then our FIN; the socket stays open for a short grace so the client can
   * read the alert before its own writes meet a reset. Nothing else is written: the peer's close is not
   * answered with close_notify, which would reuse the alert's record number.
   */
  private refuse(t: Tracked<T>, s: tls.TLSSocket, alert: TlsAlertCode, reason: string): void {
    t.state = "refusing";
    const secret = t.secret;
    t.secret = undefined;
    const suite = s.getCipher()?.standardName ?? "";
    this.opts.onRefused?.({ kind: "certificate", reason, peer: t.peer, alert });
    s.on("end", () => s.destroy());
    s.resume();
    setImmediate(() => {
      const record = secret ? tls13AlertRecord(suite, secret, RECORDS_BEFORE_ALERT, alert) : undefined;
      if (!record || t.raw.destroyed) {
        s.destroy();
        return;
      }
      t.raw.write(record);
      t.raw.end();
    });
    t.timer = setTimeout(() => this.destroy(t), this.opts.refuseGraceMs);
    t.timer.unref();
  }

  /**
   * Destroys sockets whose TCP connection the kernel has already torn down (reset by the peer, or failed
   * keepalive probes) while nothing above noticed. That happens on Node 20: once node:http2 has consumed a
   * TLS socket, a reset that arrives while a write is pending in the TLS layer is reported to no one, and
   * the session, TLS socket and descriptor stay forever. getpeername(2) on such a socket fails (ENOTCONN).
   */
  private sweep(): void {
    for (const t of this.tracked) {
      const handle = (t.raw as unknown as { _handle?: { getpeername?: (out: object) => number } | null })._handle;
      if (handle && typeof handle.getpeername === "function" && handle.getpeername({}) === 0) continue;
      this.destroy(t);
      this.opts.onReaped?.(t.peer);
    }
  }

  private destroy(t: Tracked<T>): void {
    if (t.tls) t.tls.destroy();
    t.raw.destroy();
  }
}

function contextOptions(policy: TlsServerPolicy): tls.SecureContextOptions {
  return {
    cert: policy.certPem,
    key: policy.keyPem,
    ca: policy.clientCAs,
    // As upstream (siderolabs/crypto tls.New): TLS 1.3 only, no session tickets.
    minVersion: "TLSv1.3",
    secureOptions: cryptoConstants.SSL_OP_NO_TICKET,
  };
}

const UNKNOWN_CA = new Set([
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_UNTRUSTED",
]);

/** The alert Go's crypto/tls server sends for the same verification failure (what upstream's clients expect). */
function alertFor(code: string): TlsAlertCode {
  if (code === "CERT_HAS_EXPIRED" || code === "CERT_NOT_YET_VALID") return TlsAlert.CertificateExpired;
  if (code === "CERT_REVOKED") return TlsAlert.CertificateRevoked;
  if (UNKNOWN_CA.has(code)) return TlsAlert.UnknownCA;
  return TlsAlert.BadCertificate;
}

function verifyClient(s: tls.TLSSocket, policy: TlsServerPolicy): { cert: X509Certificate } | { alert: TlsAlertCode; reason: string } {
  const cert = s.getPeerX509Certificate();
  if (!cert) return { alert: TlsAlert.CertificateRequired, reason: "client certificate required" };
  if (!s.authorized) {
    const code = String(s.authorizationError ?? "not verified");
    return { alert: alertFor(code), reason: `client certificate rejected: ${code}` };
  }
  const problem = policy.checkClient?.(cert);
  if (problem) return { alert: TlsAlert.BadCertificate, reason: problem };
  return { cert };
}
