/**
 * Key generation and the bridge from node:crypto KeyObjects (what PEM parsing yields) to WebCrypto CryptoKeys (what
 * @peculiar/x509 signs with). Node 20 has no KeyObject.toCryptoKey, so keys cross as PKCS#8 / SPKI DER.
 */
import { generateKeyPair, generateKeyPairSync, createPublicKey, type KeyObject } from "node:crypto";
import { promisify } from "node:util";
import { subtle } from "./provider.js";
import { keyAlgorithm, type KeyAlgorithm } from "./pem.js";

const generateKeyPairAsync = promisify(generateKeyPair);

/** RSA keys are 4096 bits, siderolabs/crypto's default (only the service-account key is RSA). */
export const RSA_BITS = 4096;

export async function newPrivateKey(alg: KeyAlgorithm): Promise<KeyObject> {
  switch (alg) {
    case "ed25519":
      return generateKeyPairSync("ed25519").privateKey;
    case "ecdsa":
      return generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
    case "rsa":
      // async: a 4096-bit key takes long enough that blocking the event loop would stall the API
      return (await generateKeyPairAsync("rsa", { modulusLength: RSA_BITS })).privateKey;
  }
}

/** Signature algorithm parameters @peculiar/x509 expects for a key of this type. */
export function signingAlgorithm(key: KeyObject): Algorithm | EcdsaParams | RsaHashedImportParams {
  switch (keyAlgorithm(key)) {
    case "ed25519":
      return { name: "Ed25519" };
    case "ecdsa":
      return { name: "ECDSA", hash: "SHA-256" } as EcdsaParams;
    case "rsa":
      // upstream signs RSA certificates with SHA-512
      return { name: "RSASSA-PKCS1-v1_5", hash: "SHA-512" } as RsaHashedImportParams;
  }
}

function importParams(key: KeyObject): Algorithm | EcKeyImportParams | RsaHashedImportParams {
  switch (keyAlgorithm(key)) {
    case "ed25519":
      return { name: "Ed25519" };
    case "ecdsa": {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (curve !== "prime256v1" && curve !== "P-256") throw new Error(`unsupported ECDSA curve ${String(curve)}`);
      return { name: "ECDSA", namedCurve: "P-256" } as EcKeyImportParams;
    }
    case "rsa":
      return { name: "RSASSA-PKCS1-v1_5", hash: "SHA-512" } as RsaHashedImportParams;
  }
}

export async function toSigningKey(key: KeyObject): Promise<CryptoKey> {
  const der = key.export({ type: "pkcs8", format: "der" });
  return subtle.importKey("pkcs8", der, importParams(key), false, ["sign"]);
}

/** The public half as a WebCrypto key (a CSR generator needs the pair). */
export async function toPublicCryptoKey(key: KeyObject): Promise<CryptoKey> {
  return subtle.importKey("spki", spkiDer(key), importParams(key), true, ["verify"]);
}

/** SubjectPublicKeyInfo DER of a private (or public) key; @peculiar/x509 accepts it as a public key. */
export function spkiDer(key: KeyObject): ArrayBuffer {
  const pub = key.type === "private" ? createPublicKey(key) : key;
  const der = pub.export({ type: "spki", format: "der" });
  return der.buffer.slice(der.byteOffset, der.byteOffset + der.byteLength) as ArrayBuffer;
}
