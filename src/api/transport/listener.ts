/**
 * The API's listener: the node's TLS modes mapped onto the host's TLS listener, whose authenticated
 * sockets go to grpc-js through a connection injector. That lets one port switch from maintenance TLS (no
 * client certificate) to mutual TLS in the same process, rotate the server certificate without dropping
 * connections, and refuse a client whose certificate breaks Talos's extra rule (EKU exactly clientAuth)
 * inside the TLS exchange, before any call.
 */
import type * as grpc from "@grpc/grpc-js";
import { ServerCredentials } from "@grpc/grpc-js";
import type { AddressInfo } from "node:net";
import type { X509Certificate } from "node:crypto";
import { parseRoles, Role } from "../../machinery/role.js";
import { DEFAULT_LISTENER_LIMITS, TlsListener, type Refusal, type TlsListenerOptions, type TlsServerPolicy } from "../../host/tls-listener.js";
import type { ConnectionRegistry } from "./connections.js";

export interface TlsIdentity {
  /** Leaf first, then intermediates. */
  certPem: string;
  /** A PEM node:crypto can load (PKCS#8 "PRIVATE KEY", SEC1 "EC PRIVATE KEY", ...). */
  keyPem: string;
}

export type ListenerMode =
  /** Unconfigured node: self-signed maintenance certificate, no client certificate, everyone is os:reader. */
  | { kind: "maintenance"; identity: TlsIdentity }
  /** Configured node: mutual TLS against the OS CA(s); roles from the client certificate. */
  | { kind: "mtls"; identity: TlsIdentity; clientCAs: string[] }
  /**
   * Configured node that has no server certificate it can present yet (a worker waiting for trustd):
   * TLS with a self-signed certificate and no client certificate; calls are read-only and the
   * handlers explain what the node waits for.
   */
  | { kind: "waiting"; identity: TlsIdentity };

const CLIENT_AUTH_OID = "1.3.6.1.5.5.7.3.2";

export type SocketLimits = Pick<TlsListenerOptions<unknown>, "maxConnections" | "handshakeTimeoutMs" | "closeGraceMs" | "refuseGraceMs" | "keepAliveMs" | "sweepIntervalMs">;

export interface ListenerEvents {
  onRefused?: (r: Refusal) => void;
  onAcceptError?: (err: Error) => void;
  onReaped?: (peer: string) => void;
}

function policyFor(mode: ListenerMode): TlsServerPolicy {
  const base = { certPem: mode.identity.certPem, keyPem: mode.identity.keyPem };
  return mode.kind === "mtls" ? { ...base, clientCAs: mode.clientCAs, checkClient: clientCertificateProblem } : base;
}

export class ApiListener {
  private readonly injector: grpc.ConnectionInjector;
  private readonly tls: TlsListener<ListenerMode["kind"]>;
  private mode: ListenerMode;

  constructor(
    grpcServer: grpc.Server,
    private readonly conns: ConnectionRegistry,
    mode: ListenerMode,
    events: ListenerEvents = {},
    limits: Partial<SocketLimits> = {},
  ) {
    this.injector = grpcServer.createConnectionInjector(ServerCredentials.createInsecure());
    this.mode = mode;
    this.tls = new TlsListener(policyFor(mode), mode.kind, {
      ...DEFAULT_LISTENER_LIMITS,
      ...limits,
      onAccept: (c) => {
        const roles = c.clientCertificate ? parseRoles(c.socket.getPeerCertificate().subject?.O) : new Set<string>([Role.Reader]);
        this.conns.add({ socket: c.socket, peer: c.peer, maintenance: c.tag === "maintenance", waiting: c.tag === "waiting", roles });
        this.injector.injectConnection(c.socket);
      },
      onRefused: events.onRefused,
      onAcceptError: events.onAcceptError,
      onReaped: events.onReaped,
    });
  }

  get currentMode(): ListenerMode["kind"] {
    return this.mode.kind;
  }

  /** Open TCP connections, in any state (handshake, serving, being refused). */
  get openSockets(): number {
    return this.tls.size;
  }

  listen(host: string, port: number): Promise<AddressInfo> {
    return this.tls.listen(host, port);
  }

  /** Switch mode for new connections. Existing connections keep the identity they were accepted with. */
  setMode(mode: ListenerMode): void {
    this.mode = mode;
    this.tls.setPolicy(policyFor(mode), mode.kind);
  }

  /** Replace the server certificate of the current mode (renewal) without dropping connections. */
  rotateIdentity(identity: TlsIdentity): void {
    this.mode = { ...this.mode, identity } as ListenerMode;
    this.tls.rotate(identity.certPem, identity.keyPem);
  }

  /** Close, after `graceMs`, every connection accepted in maintenance mode (after the node leaves it). */
  closeMaintenance(graceMs: number): void {
    this.tls.destroyWhere((kind) => kind === "maintenance", graceMs);
  }

  closeAll(): void {
    this.tls.destroyAll();
  }

  async close(): Promise<void> {
    await this.tls.close();
    this.injector.destroy();
  }
}

/** Talos's verifyExtKeyUsage: every non-CA certificate in the verified chain must have EKU exactly [clientAuth]. */
export function clientCertificateProblem(leaf: X509Certificate): string | undefined {
  for (let cert: X509Certificate | undefined = leaf; cert; cert = next(cert)) {
    if (cert.ca) continue;
    const eku = cert.keyUsage ?? [];
    if (eku.length !== 1 || eku[0] !== CLIENT_AUTH_OID) {
      return `certificate "${cert.subject.replace(/\n/g, ",")}" is missing the client auth extended key usage`;
    }
  }
  return undefined;
}

/** The issuer in the peer's chain, stopping at a self-issued certificate. */
function next(cert: X509Certificate): X509Certificate | undefined {
  const issuer = cert.issuerCertificate;
  return issuer && issuer !== cert && issuer.fingerprint256 !== cert.fingerprint256 ? issuer : undefined;
}
