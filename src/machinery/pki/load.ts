/**
 * Turning the base64-of-PEM pairs found in machine configs (`machine.ca`, `cluster.etcd.ca`, …) and talosconfig
 * contexts (`ca`, `crt`, `key`) into PEM text, parsed objects, and options node:tls accepts.
 */
import { X509Certificate, type KeyObject } from "node:crypto";
import type { CertAndKey } from "./ca.js";
import { fromBase64Pem, parsePrivateKeyPem, tlsKeyPem, decodePem, PemLabel } from "./pem.js";

/** Decodes `{crt, key}` base64 fields; `field` names them in errors (e.g. "machine.ca"). */
export function decodeBase64Pair(pair: { crt?: string; key?: string }, field = "certificate"): CertAndKey {
  const dec = (v: string | undefined, sub: string): string => {
    try {
      return fromBase64Pem(v ?? "");
    } catch (e) {
      throw new Error(`${field}.${sub}: ${(e as Error).message}`);
    }
  };
  return { crt: dec(pair.crt, "crt"), key: dec(pair.key, "key") };
}

export interface LoadedPair {
  pem: CertAndKey;
  cert: X509Certificate;
  key: KeyObject;
}

/** Parses a PEM pair and checks the key belongs to the certificate. */
export function loadPair(pem: CertAndKey, field = "certificate"): LoadedPair {
  const block = decodePem(pem.crt);
  if (!block || block.label !== PemLabel.Certificate) throw new Error(`${field}.crt: failed to parse PEM block`);
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pem.crt);
  } catch (e) {
    throw new Error(`${field}.crt: failed to parse certificate: ${(e as Error).message}`);
  }
  let key: KeyObject;
  try {
    key = parsePrivateKeyPem(pem.key);
  } catch (e) {
    throw new Error(`${field}.key: ${(e as Error).message}`);
  }
  if (!cert.checkPrivateKey(key)) throw new Error(`${field}: private key does not match the certificate`);
  return { pem, cert, key };
}

export function loadBase64Pair(pair: { crt?: string; key?: string }, field?: string): LoadedPair {
  return loadPair(decodeBase64Pair(pair, field), field);
}

/** `cert`/`key` options for tls.createSecureContext or grpc-js createSsl (key relabelled for OpenSSL). */
export function tlsCredentials(pair: CertAndKey): { cert: string; key: string } {
  return { cert: pair.crt, key: tlsKeyPem(pair.key) };
}
