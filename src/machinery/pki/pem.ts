/**
 * PEM blocks with the labels Talos (siderolabs/crypto) writes, and conversion to what node:crypto and node:tls load.
 * Talos labels an Ed25519 PKCS#8 key `ED25519 PRIVATE KEY`; OpenSSL only knows `PRIVATE KEY` for PKCS#8, so keys are
 * relabelled before Node sees them.
 */
import { createPrivateKey, type KeyObject } from "node:crypto";

export const PemLabel = {
  Certificate: "CERTIFICATE",
  Ed25519Private: "ED25519 PRIVATE KEY",
  ECPrivate: "EC PRIVATE KEY",
  RSAPrivate: "RSA PRIVATE KEY",
  Private: "PRIVATE KEY",
} as const;

export interface PemBlock {
  label: string;
  der: Buffer;
}

const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([\s\S]*?)-----END \1-----/;

/** First PEM block in `text`, or undefined (like Go's pem.Decode, text before the block is skipped). */
export function decodePem(text: string | Uint8Array): PemBlock | undefined {
  const s = typeof text === "string" ? text : Buffer.from(text).toString("latin1");
  const m = BLOCK.exec(s);
  if (!m) return undefined;
  const body = m[2].replace(/\s+/g, "");
  // Headers (Proc-Type etc.) are not used by Talos; a body that is not base64 means a corrupt block.
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(body)) return undefined;
  return { label: m[1], der: Buffer.from(body, "base64") };
}

/** All PEM blocks in order (a chain or a bundle of CAs). */
export function decodeAllPem(text: string): PemBlock[] {
  const out: PemBlock[] = [];
  let rest = text;
  for (;;) {
    const m = BLOCK.exec(rest);
    if (!m) return out;
    const block = decodePem(m[0]);
    if (block) out.push(block);
    rest = rest.slice((m.index ?? 0) + m[0].length);
  }
}

/** Encodes DER with 64-column lines and a trailing newline, byte-identical to Go's pem.EncodeToMemory. */
export function encodePem(label: string, der: Uint8Array): string {
  const b64 = Buffer.from(der).toString("base64");
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}${lines.length ? "\n" : ""}-----END ${label}-----\n`;
}

export type KeyAlgorithm = "ed25519" | "ecdsa" | "rsa";

/**
 * Parses a private key PEM with any of the labels Talos accepts, with the same error texts as upstream's GetKey
 * (secrets validation messages depend on them).
 */
export function parsePrivateKeyPem(pem: string | Uint8Array): KeyObject {
  const block = decodePem(pem);
  if (!block) throw new Error("failed to parse PEM block");
  let key: KeyObject;
  try {
    switch (block.label) {
      case PemLabel.RSAPrivate:
        key = createPrivateKey({ key: block.der, format: "der", type: "pkcs1" });
        break;
      case PemLabel.ECPrivate:
        key = createPrivateKey({ key: block.der, format: "der", type: "sec1" });
        break;
      case PemLabel.Ed25519Private:
      case PemLabel.Private:
        key = createPrivateKey({ key: block.der, format: "der", type: "pkcs8" });
        break;
      default:
        throw new UnsupportedKeyError(block.label);
    }
  } catch (e) {
    if (e instanceof UnsupportedKeyError) throw e;
    throw new Error(`failed to parse ${keyKindOfLabel(block.label)}key: ${(e as Error).message}`);
  }
  if (block.label === PemLabel.Ed25519Private && key.asymmetricKeyType !== "ed25519") {
    throw new Error("failed parsing Ed25519 key, got wrong key type");
  }
  return key;
}

class UnsupportedKeyError extends Error {
  constructor(label: string) {
    super(`unsupported key type: ${JSON.stringify(label)}`);
  }
}

/** Word upstream puts in "failed to parse <kind> key" (empty for generic PKCS#8). */
function keyKindOfLabel(label: string): string {
  if (label === PemLabel.RSAPrivate) return "RSA ";
  if (label === PemLabel.ECPrivate) return "ECDSA ";
  if (label === PemLabel.Ed25519Private) return "Ed25519 ";
  return "";
}

export function keyAlgorithm(key: KeyObject): KeyAlgorithm {
  switch (key.asymmetricKeyType) {
    case "ed25519":
      return "ed25519";
    case "ec":
      return "ecdsa";
    case "rsa":
      return "rsa";
    default:
      throw new Error(`unsupported key algorithm ${String(key.asymmetricKeyType)}`);
  }
}

/** Writes a private key with the label siderolabs/crypto would use for it (PKCS#8, SEC1 or PKCS#1 inside). */
export function encodePrivateKeyPem(key: KeyObject): string {
  switch (keyAlgorithm(key)) {
    case "ed25519":
      return encodePem(PemLabel.Ed25519Private, key.export({ type: "pkcs8", format: "der" }));
    case "ecdsa":
      return encodePem(PemLabel.ECPrivate, key.export({ type: "sec1", format: "der" }));
    case "rsa":
      return encodePem(PemLabel.RSAPrivate, key.export({ type: "pkcs1", format: "der" }));
  }
}

/** A key PEM node:tls / grpc-js can load: `ED25519 PRIVATE KEY` becomes `PRIVATE KEY`, other labels pass through. */
export function tlsKeyPem(pem: string | Uint8Array): string {
  const block = decodePem(pem);
  if (!block) throw new Error("failed to parse PEM block");
  if (block.label === PemLabel.Ed25519Private) return encodePem(PemLabel.Private, block.der);
  return encodePem(block.label, block.der);
}

/** base64 (std) of the PEM text, as configs and talosconfig store it. */
export function toBase64Pem(pem: string): string {
  return Buffer.from(pem, "utf8").toString("base64");
}

/** Decodes a base64-of-PEM field; throws with a message suitable for prefixing with the field name. */
export function fromBase64Pem(b64: string): string {
  const clean = b64.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(clean) || clean.length % 4 !== 0) {
    throw new Error("illegal base64 data");
  }
  return Buffer.from(clean, "base64").toString("utf8");
}
