/**
 * Certificate signing requests, both sides of trustd: a worker builds a key and a PEM CSR for its API names, and a
 * control plane signs such a CSR with the OS CA under a policy the caller sets (trustd forces a server-only leaf).
 * The CSR's SANs and CommonName are copied into the certificate as asked; they are not checked against the caller
 * (upstream does not either).
 */
import { createPublicKey, type KeyObject } from "node:crypto";
import { createCertificate, type Subject } from "./certificate.js";
import { loadCA, type CertAndKey } from "./ca.js";
import { newPrivateKey, signingAlgorithm, toPublicCryptoKey, toSigningKey } from "./keys.js";
import { decodePem, encodePem, encodePrivateKeyPem, type KeyAlgorithm } from "./pem.js";
import { x509 } from "./provider.js";

export const CSR_PEM_LABEL = "CERTIFICATE REQUEST";

export interface NewCSROptions {
  /** The key type; upstream follows the CA the certificate will chain to. */
  algorithm: KeyAlgorithm;
  commonName?: string;
  organizations?: string[];
  ipSANs?: string[];
  dnsSANs?: string[];
}

/** A fresh key and a PEM CSR signed with it. */
export async function newCSR(opts: NewCSROptions): Promise<{ csr: string; key: string }> {
  const key = await newPrivateKey(opts.algorithm);
  const name: x509.JsonName = [];
  const orgs = (opts.organizations ?? []).filter((o) => o !== "");
  if (orgs.length) name.push({ O: orgs });
  if (opts.commonName) name.push({ CN: [opts.commonName] });
  const sans: x509.JsonGeneralName[] = [
    ...uniq(opts.dnsSANs ?? []).map((value) => ({ type: "dns" as const, value })),
    ...uniq(opts.ipSANs ?? []).map((value) => ({ type: "ip" as const, value })),
  ];
  const req = await x509.Pkcs10CertificateRequestGenerator.create({
    name,
    keys: { privateKey: await toSigningKey(key), publicKey: await toPublicCryptoKey(key) },
    signingAlgorithm: signingAlgorithm(key),
    extensions: sans.length ? [new x509.SubjectAlternativeNameExtension(sans, name.length === 0)] : [],
  });
  return { csr: encodePem(CSR_PEM_LABEL, new Uint8Array(req.rawData)), key: encodePrivateKeyPem(key) };
}

/** A CSR that decoded and parsed. */
export interface ParsedCSR {
  subject: Subject;
  ipSANs: string[];
  dnsSANs: string[];
  publicKey: KeyObject;
  /** What the log line shows (Go's pkix.Name String form, roughly). */
  subjectText: string;
  request: x509.Pkcs10CertificateRequest;
}

/** Why a CSR was not accepted: `decode` (no PEM block) or `parse` (not a PKCS#10 request we can read). */
export class CSRError extends Error {
  constructor(
    readonly kind: "decode" | "parse",
    message: string,
  ) {
    super(message);
    this.name = "CSRError";
  }
}

/** Decodes the first PEM block of `pem` and parses it as a PKCS#10 request. Errors say which step failed. */
export function parseCSR(pem: string | Uint8Array): ParsedCSR {
  const block = decodePem(pem);
  if (!block) throw new CSRError("decode", "failed to decode CSR");
  try {
    const request = new x509.Pkcs10CertificateRequest(new Uint8Array(block.der));
    const publicKey = createPublicKey({ key: Buffer.from(request.publicKey.rawData), format: "der", type: "spki" });
    const json = request.subjectName.toJSON();
    const values = (t: string) => json.flatMap((rdn) => rdn[t] ?? []);
    const ipSANs: string[] = [];
    const dnsSANs: string[] = [];
    const san = request.extensions.find((e): e is x509.SubjectAlternativeNameExtension => e instanceof x509.SubjectAlternativeNameExtension);
    for (const n of san?.names.toJSON() ?? []) {
      if (n.type === "ip") ipSANs.push(n.value);
      else if (n.type === "dns") dnsSANs.push(n.value);
    }
    return { subject: { organizations: values("O"), commonName: values("CN")[0] }, ipSANs, dnsSANs, publicKey, subjectText: request.subject, request };
  } catch (e) {
    throw new CSRError("parse", `failed to parse CSR: ${(e as Error).message}`);
  }
}

export interface SignCSROptions {
  keyUsage: number;
  extKeyUsage: string[];
  validityMs: number;
  /** Rewrites the subject before signing (trustd drops Organization, so no CSR can obtain a role). */
  subject?: (s: Subject) => Subject;
  now?: Date;
}

/** Signs a parsed CSR with `ca` after checking the request's own signature; returns the certificate PEM. */
export async function signCSR(ca: CertAndKey, csr: ParsedCSR, opts: SignCSROptions): Promise<string> {
  if (!(await csr.request.verify())) throw new Error("failed verifying CSR signature: signature does not match the request's key");
  const issuer = loadCA(ca);
  const now = opts.now ?? new Date();
  return createCertificate({
    subject: opts.subject ? opts.subject(csr.subject) : csr.subject,
    subjectKey: csr.publicKey,
    issuer: issuer.cert,
    signer: issuer.key,
    notBefore: now,
    notAfter: new Date(now.getTime() + opts.validityMs),
    isCA: false,
    keyUsage: opts.keyUsage,
    extKeyUsage: opts.extKeyUsage,
    ipSANs: csr.ipSANs,
    dnsSANs: csr.dnsSANs,
  });
}

function uniq(list: string[]): string[] {
  return [...new Set(list.filter((v) => v !== ""))];
}
