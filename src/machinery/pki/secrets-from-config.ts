/**
 * Recovers the secrets bundle from a control-plane machine config (upstream NewBundleFromConfig), for
 * `gen secrets --from-controlplane-config` and `gen config --with-secrets` round trips. Both layouts are read: the
 * legacy v1alpha1 fields (base64 PEM) and the Talos 1.14 documents (KubeAPIServerCAConfig etc., plain PEM), with the
 * documents taking precedence as they do upstream.
 */
import { parseAllDocuments } from "yaml";
import { fromBase64Pem } from "./pem.js";
import type { CertAndKey } from "./ca.js";
import type { SecretsBundle } from "./secrets-types.js";
import { SecretsValidationError, validateSecrets, type RawBundle } from "./secrets-load.js";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const at = (o: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((cur, k) => (isObj(cur) ? cur[k] : undefined), o);
const s = (v: unknown): string => (typeof v === "string" ? v : "");

function b64Pair(v: unknown): CertAndKey | undefined {
  if (!isObj(v)) return undefined;
  return { crt: decodeOrEmpty(v.crt), key: decodeOrEmpty(v.key) };
}

function decodeOrEmpty(v: unknown): string {
  try {
    return fromBase64Pem(s(v));
  } catch {
    return "";
  }
}

function docPair(v: unknown): CertAndKey | undefined {
  if (!isObj(v)) return undefined;
  return { crt: s(v.cert), key: s(v.key) };
}

export function secretsFromConfig(machineConfigYaml: string): SecretsBundle {
  const docs = parseAllDocuments(machineConfigYaml).map((d) => {
    if (d.errors.length) throw new Error(`machine config is not valid YAML: ${d.errors[0].message}`);
    return d.toJS() as unknown;
  });
  const v1 = docs.find((d) => isObj(d) && d.version === "v1alpha1" && d.kind === undefined);
  const kind = (k: string) => docs.find((d) => isObj(d) && d.kind === k);
  if (!isObj(v1)) throw new Error("machine config has no v1alpha1 document");

  const identity = kind("DiscoveryIdentityConfig");
  const k8sCA = docPair(at(kind("KubeAPIServerCAConfig"), "issuingCA")) ?? b64Pair(at(v1, "cluster", "ca"));
  const aggCA = docPair(at(kind("KubeAggregatorCAConfig"), "issuingCA")) ?? b64Pair(at(v1, "cluster", "aggregatorCA"));
  const saDoc = at(kind("KubeServiceAccountConfig"), "issuer", "privateKey");
  const saLegacy = at(v1, "cluster", "serviceAccount");

  const raw: RawBundle = {
    cluster: identity
      ? { id: s(at(identity, "clusterID")), secret: s(at(identity, "clusterSecret")) }
      : { id: s(at(v1, "cluster", "id")), secret: s(at(v1, "cluster", "secret")) },
    secrets: {
      bootstrapToken: s(at(v1, "cluster", "token")),
      aescbcEncryptionSecret: s(at(v1, "cluster", "aescbcEncryptionSecret")) || undefined,
      secretboxEncryptionSecret:
        secretboxFromEncryptionConfig(kind("KubeEtcdEncryptionConfig")) ??
        (s(at(v1, "cluster", "secretboxEncryptionSecret")) || undefined),
    },
    trustdInfo: { token: s(at(v1, "machine", "token")) },
    certs: {
      etcd: b64Pair(at(v1, "cluster", "etcd", "ca")),
      k8s: k8sCA,
      k8sAggregator: aggCA,
      k8sServiceAccount:
        typeof saDoc === "string" ? { key: saDoc } : isObj(saLegacy) ? { key: decodeOrEmpty(saLegacy.key) } : undefined,
      os: b64Pair(at(v1, "machine", "ca")),
    },
  };
  const problems = validateSecrets(raw);
  if (problems.length) {
    // a worker config carries CA certificates without keys, which is the usual way to end up here
    throw new SecretsValidationError(problems.map((p) => `${p} (is this a control-plane config?)`));
  }
  return raw as SecretsBundle;
}

/** The first secretbox key of the first provider of the first resource block covering "secrets", as upstream reads it. */
function secretboxFromEncryptionConfig(doc: unknown): string | undefined {
  const resources = at(doc, "config", "resources");
  if (!Array.isArray(resources)) return undefined;
  for (const r of resources) {
    if (!Array.isArray(at(r, "resources")) || !(at(r, "resources") as unknown[]).includes("secrets")) continue;
    const first = (at(r, "providers") as unknown[] | undefined)?.[0];
    const keys = at(first, "secretbox", "keys");
    if (Array.isArray(keys) && keys.length) return s(at(keys[0], "secret")) || undefined;
    return undefined;
  }
  return undefined;
}
