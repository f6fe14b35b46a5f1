/**
 * Loading and validating a secrets bundle. The checks and their texts are upstream's Bundle.Validate, so
 * `talosctl gen config --with-secrets` users see the same complaints; problems upstream would hit while decoding
 * (bad base64, wrong YAML types) are reported as field errors in the same list instead of aborting at the first one.
 */
import { X509Certificate } from "node:crypto";
import { parse } from "yaml";
import type { CertAndKey } from "./ca.js";
import { decodePem, fromBase64Pem, parsePrivateKeyPem } from "./pem.js";
import type { SecretsBundle } from "./secrets-types.js";

export class SecretsValidationError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid secrets bundle: ${formatMultiError(problems)}`);
    this.name = "SecretsValidationError";
  }
}

/** go-multierror's text, which talosctl prints verbatim. */
export function formatMultiError(problems: string[]): string {
  const head = problems.length === 1 ? "1 error occurred:" : `${problems.length} errors occurred:`;
  return `${head}\n${problems.map((p) => `\t* ${p}`).join("\n")}\n\n`;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** Reads the YAML into a bundle, collecting every problem; throws SecretsValidationError listing them. */
export function loadSecrets(yamlText: string): SecretsBundle {
  let doc: unknown;
  try {
    doc = parse(yamlText);
  } catch (e) {
    throw new SecretsValidationError([`secrets bundle is not valid YAML: ${(e as Error).message}`]);
  }
  if (!isObj(doc)) throw new SecretsValidationError(["secrets bundle must be a YAML mapping"]);
  const problems: string[] = [];
  const str = (o: unknown, key: string, path: string): string => {
    const v = isObj(o) ? o[key] : undefined;
    if (v === undefined || v === null) return "";
    if (typeof v !== "string") {
      problems.push(`${path} must be a string`);
      return "";
    }
    return v;
  };
  const pem = (o: unknown, key: string, path: string): string => {
    const v = str(o, key, path);
    try {
      return fromBase64Pem(v);
    } catch (e) {
      problems.push(`${path} is invalid: ${(e as Error).message}`);
      return "";
    }
  };
  const certPair = (name: string): CertAndKey | undefined => {
    const o = isObj(doc.certs) ? doc.certs[name] : undefined;
    if (o === undefined || o === null) return undefined;
    return { crt: pem(o, "crt", `certs.${name}.crt`), key: pem(o, "key", `certs.${name}.key`) };
  };

  const raw: RawBundle = {
    cluster: isObj(doc.cluster) ? { id: str(doc.cluster, "id", "cluster.id"), secret: str(doc.cluster, "secret", "cluster.secret") } : undefined,
    secrets: isObj(doc.secrets)
      ? {
          bootstrapToken: str(doc.secrets, "bootstraptoken", "secrets.bootstraptoken"),
          aescbcEncryptionSecret: str(doc.secrets, "aescbcencryptionsecret", "secrets.aescbcencryptionsecret"),
          secretboxEncryptionSecret: str(doc.secrets, "secretboxencryptionsecret", "secrets.secretboxencryptionsecret"),
        }
      : undefined,
    trustdInfo: isObj(doc.trustdinfo) ? { token: str(doc.trustdinfo, "token", "trustdinfo.token") } : undefined,
    certs: isObj(doc.certs)
      ? {
          etcd: certPair("etcd"),
          k8s: certPair("k8s"),
          k8sAggregator: certPair("k8saggregator"),
          k8sServiceAccount: isObj(doc.certs.k8sserviceaccount)
            ? { key: pem(doc.certs.k8sserviceaccount, "key", "certs.k8sserviceaccount.key") }
            : undefined,
          os: certPair("os"),
        }
      : undefined,
  };
  problems.push(...validateSecrets(raw));
  if (problems.length) throw new SecretsValidationError(problems);
  // only the encryption secret that is set stays (upstream marshals both with omitempty)
  const sec = raw.secrets!;
  if (!sec.aescbcEncryptionSecret) delete sec.aescbcEncryptionSecret;
  if (!sec.secretboxEncryptionSecret) delete sec.secretboxEncryptionSecret;
  return raw as SecretsBundle;
}

/** A bundle as read, before validation: any part may be missing. */
export interface RawBundle {
  cluster?: { id: string; secret: string };
  secrets?: { bootstrapToken: string; aescbcEncryptionSecret?: string; secretboxEncryptionSecret?: string };
  trustdInfo?: { token: string };
  certs?: {
    etcd?: CertAndKey;
    k8s?: CertAndKey;
    k8sAggregator?: CertAndKey;
    k8sServiceAccount?: { key: string };
    os?: CertAndKey;
  };
}

/** Upstream's checks in upstream's order; returns the problems (empty when valid). */
export function validateSecrets(b: RawBundle): string[] {
  const p: string[] = [];
  if (!b.cluster) p.push("cluster is required");
  else {
    if (!b.cluster.id) p.push("cluster.id is required");
    if (!b.cluster.secret) p.push("cluster.secret is required");
  }
  if (!b.secrets) p.push("secrets is required");
  else {
    if (!b.secrets.bootstrapToken) p.push("secrets.bootstraptoken is required");
    const aes = b.secrets.aescbcEncryptionSecret;
    const box = b.secrets.secretboxEncryptionSecret;
    if (!aes && !box) p.push("one of [secrets.secretboxencryptionsecret, secrets.aescbcencryptionsecret] is required");
    if (aes && box) p.push("only one of [secrets.secretboxencryptionsecret, secrets.aescbcencryptionsecret] is allowed");
  }
  if (!b.trustdInfo) p.push("trustdinfo is required");
  else if (!b.trustdInfo.token) p.push("trustdinfo.token is required");

  if (!b.certs) {
    p.push("certs is required");
    return p;
  }
  const pairCheck = (name: string, pair: CertAndKey | undefined) => {
    if (!pair) p.push(`certs.${name} is required`);
    else {
      const err = pairProblem(pair);
      if (err) p.push(`certs.${name} is invalid: ${err}`);
    }
  };
  pairCheck("etcd", b.certs.etcd);
  pairCheck("k8s", b.certs.k8s);
  pairCheck("k8saggregator", b.certs.k8sAggregator);
  if (!b.certs.k8sServiceAccount) p.push("certs.k8sserviceaccount is required");
  else {
    const err = keyProblem(b.certs.k8sServiceAccount.key);
    if (err) p.push(`certs.k8sserviceaccount.key is invalid: ${err}`);
  }
  pairCheck("os", b.certs.os);
  return p;
}

function keyProblem(keyPem: string): string | undefined {
  try {
    parsePrivateKeyPem(keyPem);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/** Key first, then certificate, like upstream; the label of the certificate block is not checked (neither is it there). */
function pairProblem(pair: CertAndKey): string | undefined {
  const k = keyProblem(pair.key);
  if (k) return k;
  const block = decodePem(pair.crt);
  if (!block) return "failed to parse PEM block";
  try {
    new X509Certificate(block.der);
    return undefined;
  } catch (e) {
    return `failed to parse certificate: ${(e as Error).message}`;
  }
}
