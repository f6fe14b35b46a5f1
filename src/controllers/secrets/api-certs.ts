/**
 * secrets.APIController: ApiCertificates `api`, the Talos API identity, on both kinds of node.
 *
 * Control planes (the OS CA key is in their config): the server certificate for the CertSANs `api` names (CN = FQDN,
 * EKU serverAuth) and the node's own client certificate (CN = FQDN, O = os:impersonator, EKU clientAuth, used to
 * forward requests to other nodes), both from the OS CA and valid 24 h, renewed at half-life or when the names or
 * the CA change.
 *
 * Workers (no CA key): a fresh key and a CSR for the same names (the key type follows the last accepted CA), sent
 * to a control plane's trustd (port 50001) with machine.token. The control planes are the merged control-plane
 * Endpoints; each attempt asks the next one in turn (starting at a random one), with a 10 s deadline, and a failure is retried with
 * exponential backoff. The answer is published as the server certificate, with no client certificate (a worker
 * cannot forward) and the CAs trustd returned as the accepted ones; it is asked for again every 12 h (the
 * certificate is valid 24 h) or when the names, the token or the CAs change. What the worker waits for meanwhile
 * (which addresses it asks and why the last attempt failed) goes to `onWorkerStatus`, which the API identity shows.
 */
import { X509Certificate, createPrivateKey } from "node:crypto";
import { newCSR } from "../../machinery/pki/csr.js";
import { DEFAULT_CERT_VALIDITY_MS, HOUR_MS, issueClientCert, issueServerCert } from "../../machinery/pki/issue.js";
import { keyAlgorithm, tlsKeyPem } from "../../machinery/pki/pem.js";
import { Role } from "../../machinery/role.js";
import { ApiError, Code } from "../../machinery/errors.js";
import { joinHostPort, mergedEndpoints } from "../../machinery/kubernetes/endpoint-list.js";
import { pointer, read, readAll, readSpec } from "../../machinery/resources/read.js";
import { CONTROLPLANE_NS, EndpointType } from "../../machinery/resources/types/k8s-status.js";
import { APICertsType, CertSANType, OSRootType, SECRET_IDS, type APICertsSpec, type CertSANSpec, type OSRootSpec } from "../../machinery/resources/types/secrets.js";
import { requestTrustdCertificate, type TrustdClient } from "../../host/trustd-client.js";
import { TRUSTD_PORT } from "../../supervisor/services/trustd.js";
import type { Controller, ReconcileContext, ReconcileResult } from "../../state/runtime/index.js";
import { digest, issuedAnnotations, msUntilRenewal, reissueReason } from "../../machinery/resources/issued.js";

/** What a worker without its certificate is doing about it. */
export interface WorkerCertStatus {
  /** The trustd endpoints it asks in turn (`host:50001`); empty while none is known. */
  endpoints: string[];
  /** What it waits for before it can ask at all. */
  waitingFor?: string;
  /** The last failed attempt: the endpoint asked and its error. */
  lastError?: string;
}

export interface WorkerCertOptions {
  /** How one trustd is asked (default: the gRPC client). */
  client?: TrustdClient;
  /** trustd's port on the control planes (default 50001). */
  port?: number;
  /** How often the certificate is asked for again (default 12 h, half its validity). */
  refreshMs?: number;
  /** Deadline of one attempt (default 10 s). */
  attemptTimeoutMs?: number;
  /** Delay after the first failure, doubling up to maxMs (default 1 s … 30 s). */
  retry?: { initialMs: number; maxMs: number };
}

export interface APICertsOptions {
  validityMs?: number;
  worker?: WorkerCertOptions;
  /** Called when what the worker waits for changes; undefined when it waits for nothing (or is no worker). */
  onWorkerStatus?: (status: WorkerCertStatus | undefined) => void;
}

export function apiCertsController(opts: APICertsOptions = {}): Controller {
  const ptr = pointer(APICertsType, SECRET_IDS.api);
  const validity = opts.validityMs ?? DEFAULT_CERT_VALIDITY_MS;
  const w = opts.worker ?? {};
  const client = w.client ?? requestTrustdCertificate;
  const port = w.port ?? TRUSTD_PORT;
  const refreshMs = w.refreshMs ?? 12 * HOUR_MS;
  const attemptTimeoutMs = w.attemptTimeoutMs ?? 10_000;
  const retry = w.retry ?? { initialMs: 1000, maxMs: 30_000 };

  let failures = 0;
  // Workers start at a random control plane, as upstream shuffles its round-robin list.
  let turn = Math.floor(Math.random() * 1024);
  let reported = "undefined";
  const report = (s: WorkerCertStatus | undefined) => {
    const key = JSON.stringify(s) ?? "undefined";
    if (key === reported) return;
    reported = key;
    opts.onWorkerStatus?.(s);
  };

  async function controlPlane(ctx: ReconcileContext, root: OSRootSpec & { issuingCA: NonNullable<OSRootSpec["issuingCA"]> }, sans: CertSANSpec): Promise<ReconcileResult> {
    const existing = read(ctx, APICertsType, SECRET_IDS.api);
    const inputs = digest({ ca: root.issuingCA.crt, accepted: root.acceptedCAs, sans });
    if (reissueReason(existing, inputs) === undefined) return { requeueAfterMs: msUntilRenewal(existing) };
    const [server, client] = await Promise.all([
      issueServerCert(root.issuingCA, { commonName: sans.fqdn, ipSANs: sans.ips, dnsSANs: sans.dnsNames, validityMs: validity }),
      issueClientCert(root.issuingCA, { roles: [Role.Impersonator], commonName: sans.fqdn, validityMs: validity }),
    ]);
    const spec: APICertsSpec = { server, client, acceptedCAs: root.acceptedCAs, skipVerifyingClientCert: false };
    ctx.apply({ ...ptr, spec, annotations: issuedAnnotations(inputs, validity / 2) });
    return { requeueAfterMs: validity / 2 };
  }

  async function worker(ctx: ReconcileContext, root: OSRootSpec, sans: CertSANSpec): Promise<ReconcileResult> {
    const existing = read(ctx, APICertsType, SECRET_IDS.api);
    const inputs = digest({ trustd: true, token: root.token, accepted: root.acceptedCAs, sans });
    if (reissueReason(existing, inputs) === undefined) {
      report(undefined);
      return { requeueAfterMs: msUntilRenewal(existing) };
    }
    // A certificate from before (due for renewal, or for other names) keeps serving until the new one arrives.
    const current = existing?.metadata.owner === ctx.owner;
    const hosts = mergedEndpoints(readAll(ctx, EndpointType, CONTROLPLANE_NS).map((r) => r.spec));
    if (hosts.length === 0) {
      if (!current) report({ endpoints: [], waitingFor: "the control-plane endpoints (no Endpoints in controlplane yet: the cluster endpoint has not resolved)" });
      return;
    }
    const endpoints = hosts.map((h) => joinHostPort(h, port));
    const last = root.acceptedCAs.at(-1);
    if (!last) throw new Error("no accepted CAs: machine.ca is missing its certificate");
    const algorithm = keyAlgorithm(new X509Certificate(last.crt).publicKey);
    const { csr, key } = await newCSR({ algorithm, commonName: sans.fqdn, ipSANs: sans.ips, dnsSANs: sans.dnsNames });
    const target = endpoints[turn++ % endpoints.length];
    let crt: string;
    let ca: string;
    try {
      ({ crt, ca } = await client({ endpoint: target, token: root.token, acceptedCAs: root.acceptedCAs.map((c) => c.crt), csr, timeoutMs: attemptTimeoutMs, signal: ctx.signal }));
      checkAnswer(crt, key);
    } catch (e) {
      if (ctx.signal.aborted) return;
      failures++;
      const delay = Math.min(retry.maxMs, retry.initialMs * 2 ** (failures - 1));
      const error = `${target}: ${describe(e)}`;
      ctx.log("asking trustd for the API server certificate failed", { error, retryInMs: delay });
      if (!current) report({ endpoints, lastError: error });
      return { requeueAfterMs: delay };
    }
    failures = 0;
    const spec: APICertsSpec = { server: { crt, key }, acceptedCAs: [{ crt: ca }], skipVerifyingClientCert: false };
    ctx.apply({ ...ptr, spec, annotations: issuedAnnotations(inputs, refreshMs) });
    report(undefined);
    return { requeueAfterMs: refreshMs };
  }

  return {
    name: "secrets.APIController",
    inputs: [
      { ...pointer(OSRootType, SECRET_IDS.os), kind: "weak" },
      { ...pointer(CertSANType, SECRET_IDS.api), kind: "weak" },
      // Workers ask the control planes these name.
      { namespace: CONTROLPLANE_NS, type: EndpointType.type, kind: "weak" },
    ],
    outputs: [{ type: APICertsType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const root = readSpec(ctx, OSRootType, SECRET_IDS.os);
      if (!root) {
        // Maintenance mode: no identity of ours.
        if (read(ctx, APICertsType, SECRET_IDS.api)?.metadata.owner === ctx.owner) ctx.destroy(ptr);
        report(undefined);
        return;
      }
      const sans = readSpec(ctx, CertSANType, SECRET_IDS.api);
      const issuingCA = root.issuingCA;
      if (issuingCA) {
        report(undefined);
        return sans ? controlPlane(ctx, { ...root, issuingCA }, sans) : undefined;
      }
      if (!sans) {
        report({ endpoints: [], waitingFor: "the node's names and addresses (CertSANs api)" });
        return;
      }
      return worker(ctx, root, sans);
    },
  };
}

/** The answer must be a certificate for the key we made, or the API could not serve it. */
function checkAnswer(crt: string, keyPem: string): void {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(crt);
  } catch (e) {
    throw new ApiError(Code.Internal, `trustd answered with a certificate that does not parse: ${(e as Error).message}`);
  }
  if (!cert.checkPrivateKey(createPrivateKey(tlsKeyPem(keyPem)))) throw new ApiError(Code.Internal, "trustd answered with a certificate for another key");
}

/** Go's form for a call's status (`rpc error: code = Unauthenticated desc = invalid token`), the message otherwise. */
function describe(e: unknown): string {
  if (e instanceof ApiError) return `rpc error: code = ${Code[e.code] ?? e.code} desc = ${e.message}`;
  return (e as Error)?.message ?? String(e);
}
