/**
 * The client side of trustd (a control plane's securityapi.SecurityService on port 50001): one Certificate call to
 * one endpoint, over TLS verified against the accepted OS CAs (the server's name is the address dialled, as
 * upstream's round-robin resolver sets it), with machine.token as the `token` metadata. Which endpoint to ask and
 * how often to retry is the caller's business (secrets.APIController on workers).
 */
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  CertificateRequestSchema,
  CertificateResponseSchema,
  SecurityService,
  type CertificateRequest,
  type CertificateResponse,
} from "../machinery/api/gen/security/security_pb.js";
import { ApiError, Code } from "../machinery/errors.js";

export interface TrustdRequest {
  /** `host:port`, IPv6 hosts in brackets. */
  endpoint: string;
  token: string;
  /** PEM certificates the server's chain must lead to. */
  acceptedCAs: string[];
  /** PEM certificate signing request. */
  csr: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface TrustdAnswer {
  /** The control plane's accepted OS CAs, PEM, concatenated. */
  ca: string;
  crt: string;
}

export type TrustdClient = (req: TrustdRequest) => Promise<TrustdAnswer>;

const PATH = `/${SecurityService.typeName}/${SecurityService.method.certificate.name}`;

/** Asks one trustd to sign `csr`; rejects with an ApiError carrying the call's status (Unavailable for dial/TLS failures). */
export const requestTrustdCertificate: TrustdClient = (req) =>
  new Promise<TrustdAnswer>((resolve, reject) => {
    if (req.signal?.aborted) return reject(new ApiError(Code.Canceled, "aborted"));
    const creds = grpc.credentials.combineChannelCredentials(
      grpc.credentials.createSsl(Buffer.from(req.acceptedCAs.map((c) => (c.endsWith("\n") ? c : `${c}\n`)).join(""))),
      grpc.credentials.createFromMetadataGenerator((_params, cb) => {
        const md = new grpc.Metadata();
        md.set("token", req.token);
        cb(null, md);
      }),
    );
    const client = new grpc.Client(`dns:${req.endpoint}`, creds, {
      "grpc.max_receive_message_length": 1 << 20,
      // One try per call: the caller decides when and where to try again.
      "grpc.enable_retries": 0,
      "grpc.initial_reconnect_backoff_ms": 1000,
    });
    let settled = false;
    const finish = (err: Error | null, answer?: TrustdAnswer) => {
      if (settled) return;
      settled = true;
      req.signal?.removeEventListener("abort", onAbort);
      client.close();
      if (err) reject(err);
      else resolve(answer!);
    };
    const call = client.makeUnaryRequest<CertificateRequest, CertificateResponse>(
      PATH,
      (m) => Buffer.from(toBinary(CertificateRequestSchema, m)),
      (b) => fromBinary(CertificateResponseSchema, b),
      create(CertificateRequestSchema, { csr: Buffer.from(req.csr) }),
      new grpc.Metadata({ waitForReady: false }),
      { deadline: Date.now() + req.timeoutMs },
      (err, res) => {
        if (err) finish(new ApiError(err.code as number as Code, tidy(err.details || err.message)));
        else if (!res?.crt.length) finish(new ApiError(Code.Internal, "trustd answered without a certificate"));
        else finish(null, { ca: Buffer.from(res.ca).toString("utf8"), crt: Buffer.from(res.crt).toString("utf8") });
      },
    );
    const onAbort = () => {
      call.cancel();
      finish(new ApiError(Code.Canceled, "aborted"));
    };
    req.signal?.addEventListener("abort", onAbort, { once: true });
  });

/** grpc-js's connection errors read "No connection established. Last error: Error: connect ECONNREFUSED …. Resolution note: ". */
function tidy(details: string): string {
  return details.replace(/\. Resolution note: ?$/, "").replace(/Last error: Error: /, "last error: ");
}
