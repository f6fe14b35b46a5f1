/**
 * The API's TCP listener. We terminate TLS ourselves (node:tls) and hand each authenticated socket to
 * grpc-js through a connection injector. That lets one port switch from maintenance TLS (no client
 * certificate) to mutual TLS in the same process, rotate the server certificate without dropping
 * connections, and apply Talos's extra client check (EKU must be exactly clientAuth) before any call.
 */
import * as net from "node:net";
import * as tls from "node:tls";
import { constants as cryptoConstants, X509Certificate } from "node:crypto";
import type * as grpc from "@grpc/grpc-js";
import { ServerCredentials } from "@grpc/grpc-js";
import { parseRoles, Role } from "../../machinery/role.js";
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

export interface ListenerEvents {
  onRejected?: (reason: string, peer: string) => void;
}

export class ApiListener {
  private readonly netServer: net.Server;
  private readonly injector: grpc.ConnectionInjector;
  private tlsServer!: tls.Server;
  private mode!: ListenerMode;

  constructor(
    grpcServer: grpc.Server,
    private readonly conns: ConnectionRegistry,
    mode: ListenerMode,
    private readonly events: ListenerEvents = {},
  ) {
    this.injector = grpcServer.createConnectionInjector(ServerCredentials.createInsecure());
    this.setMode(mode);
    this.netServer = net.createServer({ noDelay: true }, (raw) => {
      // Each raw connection goes to the TLS server of the mode current at accept time.
      this.tlsServer.emit("connection", raw);
    });
  }

  get currentMode(): ListenerMode["kind"] {
    return this.mode.kind;
  }

  listen(host: string, port: number): Promise<net.AddressInfo> {
    return new Promise((resolve, reject) => {
      this.netServer.once("error", reject);
      this.netServer.listen({ host, port, exclusive: true }, () => {
        this.netServer.off("error", reject);
        resolve(this.netServer.address() as net.AddressInfo);
      });
    });
  }

  /** Switch mode for new connections. Existing connections keep the identity they were accepted with. */
  setMode(mode: ListenerMode): void {
    this.mode = mode;
    const requestCert = mode.kind === "mtls";
    const server = tls.createServer({
      cert: mode.identity.certPem,
      key: mode.identity.keyPem,
      ca: mode.kind === "mtls" ? mode.clientCAs : undefined,
      requestCert,
      rejectUnauthorized: requestCert,
      ALPNProtocols: ["h2"],
      minVersion: "TLSv1.2",
      // Talos disables session tickets; a resumed session would skip the client-certificate checks below.
      secureOptions: cryptoConstants.SSL_OP_NO_TICKET,
    });
    server.on("secureConnection", (socket) => this.accept(socket, mode));
    server.on("tlsClientError", (err, socket) => {
      this.events.onRejected?.(err.message, `${socket.remoteAddress}:${socket.remotePort}`);
      socket.destroy();
    });
    this.tlsServer = server;
  }

  /** Replace the server certificate of the current mode (renewal) without dropping connections. */
  rotateIdentity(identity: TlsIdentity): void {
    this.mode = { ...this.mode, identity } as ListenerMode;
    this.tlsServer.setSecureContext({
      cert: identity.certPem,
      key: identity.keyPem,
      ca: this.mode.kind === "mtls" ? this.mode.clientCAs : undefined,
    });
  }

  private accept(socket: tls.TLSSocket, mode: ListenerMode): void {
    const peer = `${socket.remoteAddress}:${socket.remotePort}`;
    let roles: ReadonlySet<string>;
    if (mode.kind === "mtls") {
      const problem = clientCertificateProblem(socket);
      if (problem) {
        this.events.onRejected?.(problem, peer);
        socket.destroy();
        return;
      }
      roles = parseRoles(socket.getPeerCertificate().subject?.O);
    } else {
      roles = new Set([Role.Reader]);
    }
    this.conns.add({ socket, maintenance: mode.kind === "maintenance", waiting: mode.kind === "waiting", roles });
    this.injector.injectConnection(socket);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.netServer.close(() => resolve());
      this.conns.closeAll();
      this.injector.destroy();
    });
  }
}

/** Talos's verifyExtKeyUsage: every non-CA certificate in the verified chain must have EKU exactly [clientAuth]. */
export function clientCertificateProblem(socket: tls.TLSSocket): string | undefined {
  if (!socket.authorized) return `client certificate rejected: ${socket.authorizationError ?? "not verified"}`;
  const peer = socket.getPeerX509Certificate();
  if (!peer) return "client certificate required";
  const chain: X509Certificate[] = [peer];
  for (const cert of chain) {
    if (cert.ca) continue;
    const eku = cert.keyUsage ?? [];
    if (eku.length !== 1 || eku[0] !== CLIENT_AUTH_OID) {
      return `certificate "${cert.subject.replace(/\n/g, ",")}" is missing the client auth extended key usage`;
    }
  }
  return undefined;
}
