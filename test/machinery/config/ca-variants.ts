/**
 * Certificate authorities that are wrong in one way each (algorithm, size, usage, validity, key), and helpers to put
 * them into a config: the inputs admission must refuse or accept, built with the project's own certificate builder.
 */
import { generateKeyPairSync, webcrypto, type KeyObject } from "node:crypto";
import { createCertificate, KeyUsage, ExtKeyUsage } from "../../../src/machinery/pki/certificate.js";
import { encodePrivateKeyPem } from "../../../src/machinery/pki/pem.js";
import { x509 } from "../../../src/machinery/pki/provider.js";
import { loadConfig } from "../../../src/machinery/config/index.js";

export const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

export interface CAOptions {
  key?: KeyObject;
  isCA?: boolean;
  keyUsage?: number;
  notBefore?: Date;
  notAfter?: Date;
  organizations?: string[];
}

const DAY = 86_400_000;

export function ed25519Key(): KeyObject {
  return generateKeyPairSync("ed25519").privateKey;
}

export function rsaKey(bits: number): KeyObject {
  return generateKeyPairSync("rsa", { modulusLength: bits }).privateKey;
}

/** A self-signed CA (PEM) with the given shape; Ed25519 unless `key` says otherwise. */
export async function makeCA(o: CAOptions = {}): Promise<{ crt: string; key: string }> {
  const key = o.key ?? ed25519Key();
  const now = Date.now();
  const crt = await createCertificate({
    subject: { organizations: o.organizations ?? ["talos"] },
    subjectKey: key,
    signer: key,
    notBefore: o.notBefore ?? new Date(now - DAY),
    notAfter: o.notAfter ?? new Date(now + 3650 * DAY),
    isCA: o.isCA ?? true,
    keyUsage: o.keyUsage ?? KeyUsage.keyCertSign | KeyUsage.digitalSignature,
    extKeyUsage: [ExtKeyUsage.ServerAuth, ExtKeyUsage.ClientAuth],
  });
  return { crt, key: encodePrivateKeyPem(key) };
}

/** An ECDSA P-384 CA, which node:crypto parses but the issuer cannot sign with (WebCrypto import is P-256 only). */
export async function makeP384CA(): Promise<{ crt: string; key: string }> {
  const alg = { name: "ECDSA", namedCurve: "P-384", hash: "SHA-384" };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ["sign", "verify"])) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name: "O=talos",
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 365 * DAY),
    keys,
    signingAlgorithm: alg,
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true), new x509.KeyUsagesExtension(KeyUsage.keyCertSign, true)],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey));
  const key = `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString("base64").replace(/.{64}/g, "$&\n")}\n-----END PRIVATE KEY-----\n`;
  return { crt: cert.toString("pem"), key };
}

/** `text` with machine.ca replaced (fields are base64 of the given PEM texts; undefined removes the field). */
export function withMachineCA(text: string, ca: { crt?: string; key?: string }): string {
  return loadConfig(text)
    .withV1Alpha1((v) => {
      v.machine.ca = { ...(ca.crt !== undefined ? { crt: b64(ca.crt) } : {}), ...(ca.key !== undefined ? { key: b64(ca.key) } : {}) };
    })
    .toString();
}

/** `text` with the v1alpha1 document changed by `fn`. */
export function editV1(text: string, fn: (v: { machine: Record<string, unknown>; cluster: Record<string, unknown> }) => void): string {
  return loadConfig(text)
    .withV1Alpha1((v) => {
      fn(v as never);
    })
    .toString();
}
