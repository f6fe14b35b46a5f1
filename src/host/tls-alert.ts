/**
 * A TLS 1.3 fatal alert written by us after OpenSSL finished the server side of the handshake.
 *
 * Why: Node verifies client certificates only after the handshake (its OpenSSL verify callback always
 * continues, and `rejectUnauthorized` then destroys the socket without an alert), and it offers no hook
 * for an extra check such as Talos's "EKU exactly clientAuth". A Go client such as talosctl then reports
 * "EOF" or "connection reset" instead of the reason. Upstream's Go server sends the alert from inside the
 * handshake; in TLS 1.3 the client reads it as its first post-handshake record, which is exactly the
 * record we can still produce here: encrypted with the server's application traffic secret (learned from
 * the server's keylog event) at the next record sequence number.
 */
import { createCipheriv, createHmac, type CipherGCMTypes } from "node:crypto";

/** TLS alert descriptions we send (RFC 8446 §6), with the text Go's crypto/tls prints for each. */
export const TlsAlert = {
  /** "bad certificate" */
  BadCertificate: 42,
  /** "certificate revoked" */
  CertificateRevoked: 44,
  /** "expired certificate" */
  CertificateExpired: 45,
  /** "unknown certificate authority" */
  UnknownCA: 48,
  /** "certificate required" */
  CertificateRequired: 116,
} as const;
export type TlsAlertCode = (typeof TlsAlert)[keyof typeof TlsAlert];

interface Suite {
  hash: "sha256" | "sha384";
  cipher: CipherGCMTypes | "chacha20-poly1305";
  keyLength: number;
}

/** The TLS 1.3 suites OpenSSL enables by default (CCM suites are off unless configured). */
const SUITES: Record<string, Suite> = {
  TLS_AES_128_GCM_SHA256: { hash: "sha256", cipher: "aes-128-gcm", keyLength: 16 },
  TLS_AES_256_GCM_SHA384: { hash: "sha384", cipher: "aes-256-gcm", keyLength: 32 },
  TLS_CHACHA20_POLY1305_SHA256: { hash: "sha256", cipher: "chacha20-poly1305", keyLength: 32 },
};

/** HKDF-Expand-Label (RFC 8446 §7.1) for outputs no longer than one hash block, with an empty context. */
function expandLabel(hash: Suite["hash"], secret: Buffer, label: string, length: number): Buffer {
  const full = Buffer.from(`tls13 ${label}`, "ascii");
  const info = Buffer.concat([Buffer.from([length >> 8, length & 0xff, full.length]), full, Buffer.from([0, 1])]);
  return createHmac(hash, secret).update(info).digest().subarray(0, length);
}

/**
 * The record carrying a fatal alert, protected with `trafficSecret` (SERVER_TRAFFIC_SECRET_0) at record
 * sequence number `seq`. Undefined when the suite is not one we know (the caller then just closes).
 */
export function tls13AlertRecord(suiteName: string, trafficSecret: Buffer, seq: number, alert: TlsAlertCode): Buffer | undefined {
  const suite = SUITES[suiteName];
  if (!suite) return undefined;
  const key = expandLabel(suite.hash, trafficSecret, "key", suite.keyLength);
  const nonce = expandLabel(suite.hash, trafficSecret, "iv", 12);
  // The per-record nonce is the IV XORed with the 64-bit sequence number, right-aligned.
  let s = BigInt(seq);
  for (let i = 11; i >= 4 && s > 0n; i--, s >>= 8n) nonce[i] ^= Number(s & 0xffn);
  // TLSInnerPlaintext: level fatal (2), the description, then the real content type (alert = 21).
  const inner = Buffer.from([2, alert, 21]);
  const header = Buffer.from([23, 3, 3, 0, inner.length + 16]);
  const c = createCipheriv(suite.cipher as CipherGCMTypes, key, nonce, { authTagLength: 16 });
  c.setAAD(header);
  return Buffer.concat([header, c.update(inner), c.final(), c.getAuthTag()]);
}

/** Parses one NSS key log line; returns the server's first application traffic secret if that is what it holds. */
export function serverTrafficSecret(line: Buffer): Buffer | undefined {
  const text = line.toString("latin1");
  if (!text.startsWith("SERVER_TRAFFIC_SECRET_0 ")) return undefined;
  const hex = text.trim().split(" ")[2];
  return hex ? Buffer.from(hex, "hex") : undefined;
}
