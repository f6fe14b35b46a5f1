/**
 * The public half of a private key as PEM, labelled as siderolabs/crypto labels it (what upstream writes as the
 * API server's service-account.pub): PKIX bytes under `PUBLIC KEY` (RSA), `EC PUBLIC KEY` or `ED25519 PUBLIC KEY`.
 */
import { createPublicKey } from "node:crypto";
import { encodePem, keyAlgorithm, parsePrivateKeyPem } from "./pem.js";

const LABELS = { rsa: "PUBLIC KEY", ecdsa: "EC PUBLIC KEY", ed25519: "ED25519 PUBLIC KEY" } as const;

export function publicKeyPem(privateKeyPem: string): string {
  const key = parsePrivateKeyPem(privateKeyPem);
  const der = createPublicKey(key).export({ type: "spki", format: "der" });
  return encodePem(LABELS[keyAlgorithm(key)], der);
}
