/**
 * The cluster secrets bundle of `talosctl gen secrets`: tokens, discovery identity, encryption secret and the CAs.
 * Field names on disk are upstream's (Go's yaml lower-cases struct field names); PEM values are base64 there and
 * plain PEM text in memory.
 */
import { randomBytes, randomInt } from "node:crypto";
import { stringify } from "yaml";
import { newECDSACA, newTalosCA, type CertAndKey } from "./ca.js";
import { newPrivateKey } from "./keys.js";
import { encodePrivateKeyPem, toBase64Pem } from "./pem.js";
import type { SecretsBundle } from "./secrets-types.js";

export type { SecretsBundle } from "./secrets-types.js";

export interface GenerateSecretsOptions {
  /**
   * Service-account signing key: RSA-4096 for Talos > 1.6 (the current default), ECDSA P-256 before.
   */
  serviceAccountKey?: "rsa" | "ecdsa";
  /** secretbox for Talos > 1.2 (default); aescbc before. */
  encryption?: "secretbox" | "aescbc";
  now?: Date;
}

const TOKEN_CHARS = "0123456789abcdefghijklmnopqrstuvwxyz";

function randomToken(len: number): string {
  let s = "";
  for (let i = 0; i < len; i++) s += TOKEN_CHARS[randomInt(TOKEN_CHARS.length)];
  return s;
}

/** kubeadm-style `abcdef.0123456789abcdef` token, used for both the bootstrap and the trustd token. */
export function newToken(): string {
  return `${randomToken(6)}.${randomToken(16)}`;
}

/** 32 random bytes, base64 std: cluster id, cluster secret and the etcd encryption secret. */
export function newRandomSecret(): string {
  return randomBytes(32).toString("base64");
}

export async function generateSecrets(opts: GenerateSecretsOptions = {}): Promise<SecretsBundle> {
  const now = opts.now ?? new Date();
  const [etcd, k8s, k8sAggregator, os, saKey] = await Promise.all([
    newECDSACA("etcd", now),
    newECDSACA("kubernetes", now),
    newECDSACA("aggregator", now),
    newTalosCA(now),
    newPrivateKey(opts.serviceAccountKey ?? "rsa"),
  ]);
  const encryption = newRandomSecret();
  return {
    cluster: { id: newRandomSecret(), secret: newRandomSecret() },
    secrets: {
      bootstrapToken: newToken(),
      ...((opts.encryption ?? "secretbox") === "secretbox"
        ? { secretboxEncryptionSecret: encryption }
        : { aescbcEncryptionSecret: encryption }),
    },
    trustdInfo: { token: newToken() },
    certs: { etcd, k8s, k8sAggregator, k8sServiceAccount: { key: encodePrivateKeyPem(saKey) }, os },
  };
}

const pair = (p: CertAndKey) => ({ crt: toBase64Pem(p.crt), key: toBase64Pem(p.key) });

/** The on-disk document, field for field as upstream marshals it (empty encryption secrets are omitted). */
export function secretsToDocument(b: SecretsBundle): Record<string, unknown> {
  const secrets: Record<string, string> = { bootstraptoken: b.secrets.bootstrapToken };
  if (b.secrets.aescbcEncryptionSecret) secrets.aescbcencryptionsecret = b.secrets.aescbcEncryptionSecret;
  if (b.secrets.secretboxEncryptionSecret) secrets.secretboxencryptionsecret = b.secrets.secretboxEncryptionSecret;
  return {
    cluster: { id: b.cluster.id, secret: b.cluster.secret },
    secrets,
    trustdinfo: { token: b.trustdInfo.token },
    certs: {
      etcd: pair(b.certs.etcd),
      k8s: pair(b.certs.k8s),
      k8saggregator: pair(b.certs.k8sAggregator),
      k8sserviceaccount: { key: toBase64Pem(b.certs.k8sServiceAccount.key) },
      os: pair(b.certs.os),
    },
  };
}

/** YAML as `talosctl gen secrets` writes it (4-space indent, no line folding). */
export function secretsToYaml(b: SecretsBundle): string {
  return stringify(secretsToDocument(b), { indent: 4, lineWidth: 0 });
}

// Loading and extraction live in their own files; re-exported so callers can take everything from here.
export { loadSecrets, validateSecrets, SecretsValidationError } from "./secrets-load.js";
export { secretsFromConfig } from "./secrets-from-config.js";
