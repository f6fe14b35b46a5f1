/**
 * The trustd gRPC server (securityapi.SecurityService on port 50001, control planes): TLS with the
 * TrustdCertificates server certificate and no client certificate asked (joining machines have none yet), every
 * call authenticated by its `token` metadata instead. The certificate is read from the store when the server
 * starts and swapped in place when TrustdCertificates is renewed, without dropping connections.
 *
 * It is its own grpc-js server, not the API's: nothing on port 50000 (roles, node routing) applies here. Only the
 * unary Certificate method is served; any other method, streaming ones included, answers Unimplemented.
 */
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { SecureContextOptions } from "node:tls";
import type { Logger } from "pino";
import {
  CertificateRequestSchema,
  CertificateResponseSchema,
  SecurityService,
  type CertificateRequest,
  type CertificateResponse,
} from "../../machinery/api/gen/security/security_pb.js";
import { ApiError, Code } from "../../machinery/errors.js";
import { tlsKeyPem } from "../../machinery/pki/pem.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";
import { OSRootType, SECRET_IDS, TrustdCertsType, type TrustdCertsSpec } from "../../machinery/resources/types/secrets.js";
import type { TrustdEndpoint, TrustdServer } from "../../supervisor/services/trustd.js";
import type { State } from "../../state/types.js";
import { checkToken, signServerCSR } from "./certificate.js";

export interface TrustdServerOptions {
  state: State;
  log: Logger;
  /** Where to listen: upstream's is 0.0.0.0:50001; tests pass port 0. */
  host: string;
  port: number;
  /** Validity of the certificates it signs (default 24 h). */
  validityMs?: number;
}

/** Server credentials whose certificate can be replaced while the server runs (grpc-js re-applies it to new handshakes). */
class RotatingCredentials extends grpc.ServerCredentials {
  constructor(identity: SecureContextOptions) {
    super({ requestCert: false, rejectUnauthorized: false, minVersion: "TLSv1.2" }, identity);
  }

  rotate(identity: SecureContextOptions): void {
    this.updateSecureContextOptions(identity);
  }

  _equals(other: grpc.ServerCredentials): boolean {
    return this === other;
  }
}

function identityOf(certs: TrustdCertsSpec): SecureContextOptions {
  return { cert: certs.server.crt, key: tlsKeyPem(certs.server.key) };
}

const METHOD = SecurityService.method.certificate;

export class TrustdGrpcServer implements TrustdServer {
  readonly waitingFor = "trustd certificate";
  private server: grpc.Server | undefined;
  private bound: TrustdEndpoint | undefined;
  private unwatch: (() => void) | undefined;
  private serviceLog: (line: string) => void = () => {};

  constructor(private readonly o: TrustdServerOptions) {}

  endpoint(): TrustdEndpoint | undefined {
    return this.bound;
  }

  ready(signal: AbortSignal): Promise<void> {
    const ptr = pointer(TrustdCertsType, SECRET_IDS.trustd);
    return new Promise<void>((resolve, reject) => {
      let unwatch: () => void = () => {};
      const done = (err?: Error) => {
        unwatch();
        signal.removeEventListener("abort", onAbort);
        if (err) reject(err);
        else resolve();
      };
      const onAbort = () => done(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      unwatch = this.o.state.watch(ptr, () => {
        if (readSpec(this.o.state, TrustdCertsType, SECRET_IDS.trustd)) queueMicrotask(() => done());
      });
    });
  }

  async listen(log: (line: string) => void): Promise<TrustdEndpoint> {
    if (this.server) throw new Error("trustd is already listening");
    const certs = readSpec(this.o.state, TrustdCertsType, SECRET_IDS.trustd);
    if (!certs) throw new Error("no trustd certificate (TrustdCertificates trustd) yet");
    this.serviceLog = log;
    const creds = new RotatingCredentials(identityOf(certs));
    const server = new grpc.Server({ "grpc.max_receive_message_length": 1 << 20 });
    server.addService(
      {
        Certificate: {
          path: `/${SecurityService.typeName}/${METHOD.name}`,
          requestStream: false,
          responseStream: false,
          requestSerialize: (m: CertificateRequest) => Buffer.from(toBinary(CertificateRequestSchema, m)),
          requestDeserialize: (b: Buffer) => fromBinary(CertificateRequestSchema, b),
          responseSerialize: (m: CertificateResponse) => Buffer.from(toBinary(CertificateResponseSchema, m)),
          responseDeserialize: (b: Buffer) => fromBinary(CertificateResponseSchema, b),
        },
      } satisfies grpc.ServiceDefinition,
      { Certificate: (call: grpc.ServerUnaryCall<CertificateRequest, CertificateResponse>, cb: grpc.sendUnaryData<CertificateResponse>) => void this.certificate(call, cb) },
    );
    const host = this.o.host.includes(":") ? `[${this.o.host}]` : this.o.host;
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`${host}:${this.o.port}`, creds, (err, p) => (err ? reject(new Error(`trustd: listen on ${host}:${this.o.port}: ${err.message}`)) : resolve(p))),
    ).catch((err) => {
      server.forceShutdown();
      throw err;
    });
    this.server = server;
    this.bound = { host: this.o.host, port };
    // Renewals (and a changed CA) reach new handshakes at once; connections already up keep their session.
    this.unwatch = this.o.state.watch(pointer(TrustdCertsType, SECRET_IDS.trustd), () => {
      const next = readSpec(this.o.state, TrustdCertsType, SECRET_IDS.trustd);
      if (next) creds.rotate(identityOf(next));
    });
    return this.bound;
  }

  async close(): Promise<void> {
    this.unwatch?.();
    this.unwatch = undefined;
    const server = this.server;
    this.server = undefined;
    this.bound = undefined;
    if (!server) return;
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, 5000);
      server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
  }

  private async certificate(call: grpc.ServerUnaryCall<CertificateRequest, CertificateResponse>, cb: grpc.sendUnaryData<CertificateResponse>): Promise<void> {
    const peer = call.getPeer();
    try {
      const root = readSpec(this.o.state, OSRootType, SECRET_IDS.os);
      try {
        checkToken(call.metadata.get("token"), root?.token ?? "");
      } catch (e) {
        const msg = `trustd: refused a certificate request from ${peer}: ${(e as Error).message}`;
        this.serviceLog(msg);
        this.o.log.warn({ peer, reason: (e as Error).message }, "trustd refused a certificate request");
        throw e;
      }
      const signed = await signServerCSR(root, call.request.csr, this.o.validityMs);
      const { csr } = signed;
      this.serviceLog(`trustd: received CSR signing request from ${peer}: subject ${csr.subjectText} dns names [${csr.dnsSANs.join(" ")}] addresses [${csr.ipSANs.join(" ")}]`);
      if (signed.strippedOrganizations.length) this.serviceLog(`trustd: removing client auth organization from CSR: [${signed.strippedOrganizations.join(" ")}]`);
      this.o.log.info({ peer, subject: csr.subjectText }, "trustd signed an API server certificate");
      cb(null, create(CertificateResponseSchema, { ca: Buffer.from(signed.ca), crt: Buffer.from(signed.crt) }));
    } catch (e) {
      if (!(e instanceof ApiError) || e.code !== Code.Unauthenticated) this.serviceLog(`trustd: certificate request from ${peer} failed: ${(e as Error).message}`);
      cb(e instanceof ApiError ? { code: e.code as number as grpc.status, details: e.message } : { code: grpc.status.INTERNAL, details: (e as Error).message });
    }
  }
}
