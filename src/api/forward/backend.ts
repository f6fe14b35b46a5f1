/**
 * A connection to another node's API (upstream's remote apid backend): gRPC over HTTP/2 over mutual TLS to
 * `<target>:50000`, authenticated with this node's own client certificate (O = os:impersonator) and verifying
 * the server against the accepted OS CAs, its name against the target. Messages are raw bytes both ways.
 *
 * A small gRPC client on node:http2 rather than grpc-js, because forwarding must bound what a target can
 * hold: grpc-js has no connect or handshake deadline (upstream's MinConnectTimeout), so one target that
 * accepts TCP and never answers would hang its calls and keep its socket forever. Here:
 * - connecting (TCP + TLS + HTTP/2 settings) has one deadline (20 s, as upstream's MinConnectTimeout); a
 *   failure fails the calls waiting for it with Unavailable, and calls in the next backoff period (1 s
 *   growing to 15 s, as upstream's) fail at once with the same error instead of dialing again;
 * - a connection without calls closes after the idle timeout; a PKI change closes them all (gracefully:
 *   calls in flight finish);
 * - reply messages are limited to 32 MiB, and a reply is read only as fast as its consumer takes it
 *   (HTTP/2 flow control pushes back on the target).
 */
import * as http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { DialError, type TlsDialer } from "../../host/tls-dial.js";
import { dialAddress } from "./director.js";

export interface ClientMaterial {
  ca: string[];
  certPem: string;
  keyPem: string;
}

export interface BackendOptions {
  port: number;
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  /** How long a closed backend's calls in flight may go on before its connection is destroyed. */
  closeGraceMs: number;
  maxMessageBytes: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  keepAliveMs: number;
  /** HTTP/2 windows (upstream: 65535*32 per stream, 65535*16 per connection). */
  streamWindowBytes: number;
  connectionWindowBytes: number;
}

export const DEFAULT_BACKEND_OPTIONS: BackendOptions = {
  port: 50000,
  connectTimeoutMs: 20_000,
  idleTimeoutMs: 15 * 60_000,
  closeGraceMs: 30 * 60_000,
  maxMessageBytes: 32 * 1024 * 1024,
  backoffBaseMs: 1_000,
  backoffMaxMs: 15_000,
  keepAliveMs: 15_000,
  streamWindowBytes: 65535 * 32,
  connectionWindowBytes: 65535 * 16,
};

/** A gRPC status from a target (or about reaching it). */
export class StatusError extends Error {
  constructor(
    readonly code: grpc.status,
    readonly details: string,
    readonly metadata: grpc.Metadata = new grpc.Metadata(),
    /** The target's grpc-status-details-bin (an encoded google.rpc.Status). */
    readonly statusBin?: Buffer,
  ) {
    super(details);
    this.name = "StatusError";
  }
}

/** Response headers that are transport, not metadata. */
const RESERVED = ["content-type", "grpc-status", "grpc-message", "grpc-encoding", "grpc-accept-encoding", "grpc-status-details-bin", "te", "date"];
/** Request metadata keys the transport writes itself. */
const RESERVED_OUT = new Set(["content-type", "te", "grpc-timeout", "grpc-encoding", "grpc-accept-encoding", "grpc-status", "grpc-message", "grpc-status-details-bin", "user-agent"]);

function toMetadata(headers: http2.IncomingHttpHeaders): grpc.Metadata {
  const plain: http2.IncomingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (!k.startsWith(":") && !RESERVED.includes(k)) plain[k] = v;
  return grpc.Metadata.fromHttp2Headers(plain);
}

function decodeMessage(v: string | string[] | undefined): string {
  const s = Array.isArray(v) ? v.join(",") : (v ?? "");
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function statusFrom(headers: http2.IncomingHttpHeaders): StatusError | { ok: grpc.Metadata } {
  const code = Number(headers["grpc-status"]);
  const md = toMetadata(headers);
  if (code === 0) return { ok: md };
  const bin = headers["grpc-status-details-bin"];
  const statusBin = typeof bin === "string" ? Buffer.from(bin, "base64") : undefined;
  return new StatusError(Number.isInteger(code) && code > 0 && code <= 16 ? code : grpc.status.UNKNOWN, decodeMessage(headers["grpc-message"]), md, statusBin);
}

/** gRPC's mapping of a non-200 HTTP status. */
function httpStatusError(status: number): StatusError {
  const code =
    status === 400 ? grpc.status.INTERNAL
    : status === 401 ? grpc.status.UNAUTHENTICATED
    : status === 403 ? grpc.status.PERMISSION_DENIED
    : status === 404 ? grpc.status.UNIMPLEMENTED
    : status === 429 || status === 502 || status === 503 || status === 504 ? grpc.status.UNAVAILABLE
    : grpc.status.UNKNOWN;
  return new StatusError(code, `unexpected HTTP status code received from server: ${status}`);
}

function rstError(code: number | undefined): StatusError {
  const c = http2.constants;
  if (code === c.NGHTTP2_REFUSED_STREAM) return new StatusError(grpc.status.UNAVAILABLE, "stream refused by the target");
  if (code === c.NGHTTP2_CANCEL) return new StatusError(grpc.status.CANCELLED, "stream cancelled by the target");
  if (code === c.NGHTTP2_ENHANCE_YOUR_CALM) return new StatusError(grpc.status.RESOURCE_EXHAUSTED, "target said: enhance your calm");
  if (code === c.NGHTTP2_INADEQUATE_SECURITY) return new StatusError(grpc.status.PERMISSION_DENIED, "target said: inadequate security");
  return new StatusError(grpc.status.INTERNAL, `stream closed by the target with RST_STREAM code ${code ?? "unknown"}`);
}

/** The grpc-timeout header for a deadline (at most 8 digits, in the finest unit that fits). */
export function grpcTimeout(deadline: number): string {
  const ms = Math.max(1, Math.ceil(deadline - Date.now()));
  if (ms < 1e8) return `${ms}m`;
  if (ms / 1000 < 1e8) return `${Math.ceil(ms / 1000)}S`;
  return `${Math.min(99_999_999, Math.ceil(ms / 60_000))}M`;
}

/**
 * One call on a target. Reply messages are taken with messages(), which ends with the call's status (thrown
 * when not OK); request messages go in with write() and end().
 */
export class BackendStream {
  private readonly queue: Buffer[] = [];
  private waiter: (() => void) | undefined;
  private final: StatusError | { ok: grpc.Metadata } | undefined;
  private trailers: http2.IncomingHttpHeaders | undefined;
  private headerLeft = 5;
  private compressed = 0;
  private size = 0;
  private body: Buffer[] = [];
  private bodyLeft = -1;
  private headersSeen: ((md: grpc.Metadata) => void) | undefined;
  /** Response headers (empty for a trailers-only reply); never rejects. */
  readonly headers: Promise<grpc.Metadata>;

  constructor(
    private readonly stream: http2.ClientHttp2Stream,
    private readonly maxMessageBytes: number,
  ) {
    this.headers = new Promise((resolve) => (this.headersSeen = resolve));
    stream.on("response", (h) => this.onResponse(h));
    stream.on("trailers", (h) => (this.trailers = h));
    stream.on("data", (chunk: Buffer) => this.onData(chunk));
    stream.on("end", () => this.onEnd());
    stream.on("close", () => this.settle(rstError(stream.rstCode), true));
    // A reset by the target, or the connection failing under the call (the listener also keeps it from being uncaught).
    stream.on("error", (err: Error) => {
      const rst = stream.rstCode;
      this.settle(rst ? rstError(rst) : new StatusError(grpc.status.UNAVAILABLE, `connection to the target failed: ${err.message}`), true);
    });
  }

  /** Send one request message; resolves when the stream takes more. */
  write(msg: Buffer): Promise<void> {
    const s = this.stream;
    if (this.final || s.destroyed || s.writableEnded) return Promise.reject(this.final instanceof StatusError ? this.final : new StatusError(grpc.status.CANCELLED, "call to the target is over"));
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(msg.length, 1);
    s.write(prefix);
    if (s.write(msg)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = () => {
        s.off("drain", done);
        s.off("close", done);
        if (this.final instanceof StatusError) reject(this.final);
        else resolve();
      };
      s.on("drain", done);
      s.on("close", done);
    });
  }

  /** No more request messages. */
  end(): void {
    if (!this.stream.destroyed && !this.stream.writableEnded) this.stream.end();
  }

  cancel(reason = "call cancelled"): void {
    this.settle(new StatusError(grpc.status.CANCELLED, reason), true);
    if (!this.stream.destroyed) this.stream.close(http2.constants.NGHTTP2_CANCEL);
  }

  async *messages(): AsyncGenerator<Buffer, grpc.Metadata> {
    for (;;) {
      const next = this.queue.shift();
      if (next) {
        if (this.queue.length === 0 && !this.final) this.stream.resume();
        yield next;
        continue;
      }
      const final = this.final;
      if (final) {
        if (final instanceof StatusError) throw final;
        return final.ok;
      }
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  /**
   * The call's outcome. A status from the target comes after every message it sent (they are still taken);
   * `drop`: the call broke (reset, cancelled, a bad message), and what was queued is dropped.
   */
  private settle(result: StatusError | { ok: grpc.Metadata }, drop = false): void {
    if (this.final) return;
    this.final = result;
    this.headersSeen?.(new grpc.Metadata());
    if (drop) this.queue.length = 0;
    this.wake();
  }

  private fail(err: StatusError): void {
    this.settle(err, true);
    if (!this.stream.destroyed) this.stream.close(http2.constants.NGHTTP2_CANCEL);
  }

  private onResponse(h: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader): void {
    const status = Number(h[":status"]);
    if (status !== 200) return this.fail(httpStatusError(status));
    const ct = String(h["content-type"] ?? "");
    if (!ct.startsWith("application/grpc")) return this.fail(new StatusError(grpc.status.UNKNOWN, `unexpected content-type ${JSON.stringify(ct)} from the target`));
    if (h["grpc-status"] !== undefined) {
      // Trailers-only reply: the status came with the headers.
      this.trailers = h;
      this.headersSeen?.(new grpc.Metadata());
      return;
    }
    this.headersSeen?.(toMetadata(h));
  }

  private onData(chunk: Buffer): void {
    if (this.final) return;
    let i = 0;
    while (i < chunk.length) {
      if (this.headerLeft > 0) {
        const byte = chunk[i++];
        if (this.headerLeft === 5) this.compressed = byte;
        else this.size = this.size * 256 + byte;
        if (--this.headerLeft > 0) continue;
        if (this.compressed !== 0) return this.fail(new StatusError(grpc.status.INTERNAL, "target sent a compressed message without an agreed encoding"));
        if (this.size > this.maxMessageBytes) {
          return this.fail(new StatusError(grpc.status.RESOURCE_EXHAUSTED, `grpc: received message larger than max (${this.size} vs. ${this.maxMessageBytes})`));
        }
        this.bodyLeft = this.size;
        this.body = [];
        if (this.bodyLeft === 0) this.push();
        continue;
      }
      const take = Math.min(this.bodyLeft, chunk.length - i);
      this.body.push(chunk.subarray(i, i + take));
      this.bodyLeft -= take;
      i += take;
      if (this.bodyLeft === 0) this.push();
    }
    if (this.queue.length > 0) this.stream.pause();
  }

  private push(): void {
    this.queue.push(this.body.length === 1 ? this.body[0] : Buffer.concat(this.body));
    this.body = [];
    this.headerLeft = 5;
    this.size = 0;
    this.bodyLeft = -1;
    this.wake();
  }

  private onEnd(): void {
    if (this.headerLeft !== 5) return this.settle(new StatusError(grpc.status.INTERNAL, "target ended the reply inside a message"));
    this.settle(this.trailers ? statusFrom(this.trailers) : new StatusError(grpc.status.INTERNAL, "target ended the reply without a status"));
    // The reply is over; if the request side is still open, it is no longer wanted.
    if (!this.stream.destroyed && !this.stream.writableEnded) this.stream.close(http2.constants.NGHTTP2_NO_ERROR);
  }
}

/** Go's dial error texts, which talosctl users know from upstream. */
function dialStatus(err: unknown, address: string): StatusError {
  const prefix = "connection error: desc = ";
  if (err instanceof DialError) {
    if (err.phase === "timeout") {
      return new StatusError(grpc.status.UNAVAILABLE, `${prefix}"transport: Error while dialing: dial tcp ${address}: i/o timeout"`);
    }
    if (err.phase === "handshake") return new StatusError(grpc.status.UNAVAILABLE, `${prefix}"transport: authentication handshake failed: ${err.message}"`);
    const why =
      err.code === "ECONNREFUSED" ? "connect: connection refused"
      : err.code === "EHOSTUNREACH" ? "connect: no route to host"
      : err.code === "ENETUNREACH" ? "connect: network is unreachable"
      : err.code === "ENOTFOUND" || err.code === "EAI_AGAIN" ? "lookup failed: no such host"
      : err.message;
    return new StatusError(grpc.status.UNAVAILABLE, `${prefix}"transport: Error while dialing: dial tcp ${address}: ${why}"`);
  }
  if (err instanceof StatusError) return err;
  return new StatusError(grpc.status.UNAVAILABLE, `${prefix}"transport: ${(err as Error)?.message ?? String(err)}"`);
}

export class Backend {
  private session: http2.ClientHttp2Session | undefined;
  private connecting: Promise<http2.ClientHttp2Session> | undefined;
  private failures = 0;
  private retryAt = 0;
  private lastError: StatusError | undefined;
  private active = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  private closed = false;
  readonly address: string;

  constructor(
    readonly target: string,
    private readonly material: () => ClientMaterial | undefined,
    private readonly dialer: TlsDialer,
    private readonly o: BackendOptions,
    /** Called when the backend holds nothing any more (idle close), so the pool may drop it. */
    private readonly onIdle: (b: Backend) => void = () => {},
  ) {
    this.address = dialAddress(target, o.port);
  }

  /** Calls in flight. */
  get calls(): number {
    return this.active;
  }

  /** Whether a connection is open or being made. */
  get connected(): boolean {
    return this.session !== undefined || this.connecting !== undefined;
  }

  /** Start a call; rejects with a StatusError when the target cannot be reached. */
  async open(method: string, md: grpc.Metadata, deadline?: number): Promise<BackendStream> {
    const headers: http2.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(md.toHttp2Headers())) if (!RESERVED_OUT.has(k)) headers[k] = v;
    headers[http2.constants.HTTP2_HEADER_METHOD] = "POST";
    headers[http2.constants.HTTP2_HEADER_PATH] = method;
    headers[http2.constants.HTTP2_HEADER_AUTHORITY] = this.address;
    headers["content-type"] = "application/grpc";
    headers.te = "trailers";
    const ua = md.get("user-agent")[0];
    headers["user-agent"] = ua ? `${String(ua)} machined-forward` : "machined-forward";
    if (deadline !== undefined && Number.isFinite(deadline)) {
      if (deadline <= Date.now()) throw new StatusError(grpc.status.DEADLINE_EXCEEDED, "context deadline exceeded");
      headers["grpc-timeout"] = grpcTimeout(deadline);
    }
    for (let attempt = 0; ; attempt++) {
      const session = await this.ready();
      let stream: http2.ClientHttp2Stream;
      try {
        stream = session.request(headers, { endStream: false });
      } catch (err) {
        // The session went away between ready() and now (GOAWAY, close): one more try on a fresh one.
        if (this.session === session) this.session = undefined;
        if (attempt === 0) continue;
        throw dialStatus(err, this.address);
      }
      this.track(stream);
      return new BackendStream(stream, this.o.maxMessageBytes);
    }
  }

  /** Stop taking calls; calls in flight may finish within closeGraceMs. */
  close(): void {
    this.closed = true;
    clearTimeout(this.idleTimer);
    const s = this.session;
    this.session = undefined;
    if (s) closeGracefully(s, this.o.closeGraceMs);
    void this.connecting?.then((late) => closeGracefully(late, this.o.closeGraceMs)).catch(() => {});
  }

  private track(stream: http2.ClientHttp2Stream): void {
    this.active++;
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    stream.once("close", () => {
      this.active--;
      if (this.active === 0 && !this.closed) {
        this.idleTimer = setTimeout(() => this.idleClose(), this.o.idleTimeoutMs);
        this.idleTimer.unref();
      }
    });
  }

  private idleClose(): void {
    if (this.active > 0) return;
    const s = this.session;
    this.session = undefined;
    s?.close();
    this.onIdle(this);
  }

  private ready(): Promise<http2.ClientHttp2Session> {
    if (this.closed) return Promise.reject(new StatusError(grpc.status.UNAVAILABLE, "connection to the target is closing"));
    const s = this.session;
    if (s && !s.closed && !s.destroyed) return Promise.resolve(s);
    this.session = undefined;
    if (this.connecting) return this.connecting;
    if (this.lastError && Date.now() < this.retryAt) return Promise.reject(this.lastError);
    const p = this.connect().then(
      (session) => {
        this.connecting = undefined;
        this.failures = 0;
        this.lastError = undefined;
        if (this.closed) {
          closeGracefully(session, 0);
          throw new StatusError(grpc.status.UNAVAILABLE, "connection to the target is closing");
        }
        this.session = session;
        return session;
      },
      (err: unknown) => {
        this.connecting = undefined;
        const status = dialStatus(err, this.address);
        this.failures++;
        const delay = Math.min(this.o.backoffBaseMs * 1.6 ** (this.failures - 1), this.o.backoffMaxMs);
        // ±20% jitter, as gRPC's backoff.
        this.retryAt = Date.now() + delay * (0.8 + Math.random() * 0.4);
        this.lastError = status;
        throw status;
      },
    );
    this.connecting = p;
    return p;
  }

  private async connect(): Promise<http2.ClientHttp2Session> {
    const m = this.material();
    if (!m) throw new StatusError(grpc.status.UNAVAILABLE, "no client certificate to forward with");
    const started = Date.now();
    const socket = await this.dialer.dial({
      host: this.target.replace(/^\[|\]$/g, ""),
      port: this.o.port,
      ca: m.ca,
      certPem: m.certPem,
      keyPem: m.keyPem,
      timeoutMs: this.o.connectTimeoutMs,
      keepAliveMs: this.o.keepAliveMs,
    });
    const session = http2.connect(`https://${this.address}`, {
      createConnection: () => socket,
      settings: { initialWindowSize: this.o.streamWindowBytes, enablePush: false },
    });
    session.on("error", () => session.destroy());
    socket.once("close", () => session.destroy());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => done(new DialError(`no HTTP/2 settings within ${this.o.connectTimeoutMs} ms`, "timeout")), Math.max(1, this.o.connectTimeoutMs - (Date.now() - started)));
      timer.unref();
      const done = (err?: Error) => {
        clearTimeout(timer);
        session.off("connect", onConnect);
        session.off("close", onClose);
        if (err) {
          session.destroy();
          socket.destroy();
          reject(err);
          return;
        }
        session.setLocalWindowSize(this.o.connectionWindowBytes);
        // A GOAWAY ends new calls on this session; the next call dials a fresh one.
        session.once("goaway", () => {
          if (this.session === session) this.session = undefined;
        });
        session.once("close", () => {
          if (this.session === session) this.session = undefined;
        });
        resolve(session);
      };
      const onConnect = () => done();
      const onClose = () => done(new DialError("connection closed before HTTP/2 was set up", "handshake"));
      session.once("connect", onConnect);
      session.once("close", onClose);
    });
  }
}

function closeGracefully(s: http2.ClientHttp2Session, graceMs: number): void {
  if (s.closed || s.destroyed) return;
  s.close();
  if (graceMs <= 0) {
    s.destroy();
    return;
  }
  const t = setTimeout(() => s.destroy(), graceMs);
  t.unref();
  s.once("close", () => clearTimeout(t));
}
