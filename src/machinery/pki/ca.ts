/**
 * Certificate authorities as `talosctl gen secrets` makes them: the OS (Talos API) CA is Ed25519 with O=talos,
 * etcd / Kubernetes / aggregator CAs are ECDSA P-256; all valid 10 years from now.
 */
import type { KeyObject } from "node:crypto";
import { createCertificate, ExtKeyUsage, KeyUsage, parseCertificate, type Subject } from "./certificate.js";
import { newPrivateKey } from "./keys.js";
import { encodePrivateKeyPem, parsePrivateKeyPem, type KeyAlgorithm } from "./pem.js";

/** A certificate and its private key, both PEM text (key with Talos labels). */
export interface CertAndKey {
  crt: string;
  key: string;
}

/** 87600h, upstream's CAValidityTime. */
export const CA_VALIDITY_MS = 87_600 * 3_600_000;

export interface NewCAOptions {
  subject: Subject;
  algorithm: KeyAlgorithm;
  validityMs?: number;
  now?: Date;
}

export async function newSelfSignedCA(opts: NewCAOptions): Promise<CertAndKey> {
  const key = await newPrivateKey(opts.algorithm);
  const now = opts.now ?? new Date();
  const crt = await createCertificate({
    subject: opts.subject,
    subjectKey: key,
    signer: key,
    notBefore: now,
    notAfter: new Date(now.getTime() + (opts.validityMs ?? CA_VALIDITY_MS)),
    isCA: true,
    keyUsage: KeyUsage.keyCertSign | KeyUsage.digitalSignature,
    extKeyUsage: [ExtKeyUsage.ServerAuth, ExtKeyUsage.ClientAuth],
  });
  return { crt, key: encodePrivateKeyPem(key) };
}

/** The Talos API CA (secrets.os): Ed25519, O=talos. */
export function newTalosCA(now?: Date): Promise<CertAndKey> {
  return newSelfSignedCA({ subject: { organizations: ["talos"] }, algorithm: "ed25519", now });
}

export type ECDSACAKind = "etcd" | "kubernetes" | "aggregator";

/** etcd (O=etcd), Kubernetes (O=kubernetes) and aggregator/front-proxy (CN=front-proxy) CAs, ECDSA P-256. */
export function newECDSACA(kind: ECDSACAKind, now?: Date): Promise<CertAndKey> {
  const subject: Subject = kind === "aggregator" ? { commonName: "front-proxy" } : { organizations: [kind] };
  return newSelfSignedCA({ subject, algorithm: "ecdsa", now });
}

/** A CA loaded for signing: parsed certificate plus key. */
export interface LoadedCA {
  pem: CertAndKey;
  cert: ReturnType<typeof parseCertificate>;
  key: KeyObject;
}

export function loadCA(ca: CertAndKey): LoadedCA {
  return { pem: ca, cert: parseCertificate(ca.crt), key: parsePrivateKeyPem(ca.key) };
}
