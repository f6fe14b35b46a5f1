/**
 * The Kubernetes roots read from a machine config (v1alpha1 `cluster` section), shared by the secrets controllers:
 * KubernetesRootSecrets and KubeletSecrets. Config fields hold base64 PEM; the specs hold PEM text, and a field that
 * does not decode is an error naming it.
 */
import { isV1Alpha1, type MachineConfig } from "../config/index.js";
import { DEFAULT_KUBEPRISM_PORT } from "../generate/constants.js";
import { fromBase64Pem } from "../pki/pem.js";
import type { KubeletSecretsSpec, KubernetesRootSpec, PemCert } from "../resources/types/secrets.js";
import { apiServerPort } from "./control-plane-args.js";
import { apiServerIPs, dnsDomain, serviceCIDRs } from "./network.js";

/**
 * Whether the v1alpha1 document has `cluster` and `machine` sections (upstream's `Cluster() != nil && Machine() !=
 * nil`); the typed view fills missing sections with `{}`, so only the document itself tells.
 */
export function hasClusterAndMachine(cfg: MachineConfig | undefined): cfg is MachineConfig {
  const doc = cfg?.documents.find(isV1Alpha1)?.data;
  return doc !== undefined && doc.cluster != null && doc.machine != null;
}

/** A base64-of-PEM config field as PEM text; the error names the field. */
export function pem(b64: string, field: string): string {
  try {
    return fromBase64Pem(b64);
  } catch (err) {
    throw new Error(`${field}: ${(err as Error).message}`);
  }
}

/** KubePrism's endpoint when it is on, else the API server on this node. */
export function localEndpoint(cfg: MachineConfig): string {
  const prism = cfg.machine?.features?.kubePrism;
  if (prism?.enabled) return `https://127.0.0.1:${prism.port || DEFAULT_KUBEPRISM_PORT}`;
  return `https://localhost:${apiServerPort(cfg)}`;
}

/** cluster.token is `<id>.<secret>`; anything else gives empty parts (upstream's clusterToken). */
export function splitToken(token: string | undefined): { id: string; secret: string } {
  const parts = (token ?? "").split(".");
  return parts.length === 2 ? { id: parts[0], secret: parts[1] } : { id: "", secret: "" };
}

export function kubernetesRoot(cfg: MachineConfig): KubernetesRootSpec {
  const c = cfg.cluster!;
  let ips: string[];
  try {
    ips = apiServerIPs(serviceCIDRs(cfg));
  } catch (err) {
    throw new Error(`error building API service IPs: ${(err as Error).message}`);
  }
  if (!c.aggregatorCA?.crt || !c.aggregatorCA.key) throw new Error("missing cluster.aggregatorCA secret");
  const accepted: PemCert[] = (c.acceptedCAs ?? []).map((a, i) => ({ crt: pem(a.crt ?? "", `cluster.acceptedCAs[${i}].crt`) }));
  const caCrt = c.ca?.crt ? pem(c.ca.crt, "cluster.ca.crt") : undefined;
  if (caCrt) accepted.push({ crt: caCrt });
  if (accepted.length === 0) throw new Error("missing cluster.CA secret");
  const token = splitToken(c.token);
  return {
    name: c.clusterName ?? "",
    endpoint: cfg.endpoint() ?? "",
    localEndpoint: localEndpoint(cfg),
    certSANs: [...(c.apiServer?.certSANs ?? [])],
    dnsDomain: dnsDomain(cfg),
    // A worker's config carries cluster.ca without its key: that CA cannot issue anything here.
    issuingCA: caCrt && c.ca?.key ? { crt: caCrt, key: pem(c.ca.key, "cluster.ca.key") } : undefined,
    acceptedCAs: accepted,
    serviceAccount: c.serviceAccount?.key ? { key: pem(c.serviceAccount.key, "cluster.serviceAccount.key") } : undefined,
    aggregatorCA: { crt: pem(c.aggregatorCA.crt, "cluster.aggregatorCA.crt"), key: pem(c.aggregatorCA.key, "cluster.aggregatorCA.key") },
    aescbcEncryptionSecret: c.aescbcEncryptionSecret ?? "",
    secretboxEncryptionSecret: c.secretboxEncryptionSecret ?? "",
    bootstrapTokenID: token.id,
    bootstrapTokenSecret: token.secret,
    apiServerIPs: ips,
  };
}

/**
 * KubeletSecrets: the API server the kubelet bootstraps against — KubePrism when on; this node's API server on a
 * control plane; the cluster endpoint on a worker — with cluster.ca's certificate plus cluster.acceptedCAs as
 * trusted CAs, and the bootstrap token.
 */
export function kubeletSecrets(cfg: MachineConfig): KubeletSecretsSpec {
  const c = cfg.cluster!;
  const prism = cfg.machine?.features?.kubePrism;
  const t = cfg.machineType();
  let endpoint: string;
  if (prism?.enabled) endpoint = `https://127.0.0.1:${prism.port || DEFAULT_KUBEPRISM_PORT}`;
  else if (t === "controlplane" || t === "init") endpoint = `https://localhost:${apiServerPort(cfg)}`;
  else endpoint = cfg.endpoint() ?? "";
  const accepted: PemCert[] = [];
  if (c.ca?.crt) accepted.push({ crt: pem(c.ca.crt, "cluster.ca.crt") });
  (c.acceptedCAs ?? []).forEach((a, i) => accepted.push({ crt: pem(a.crt ?? "", `cluster.acceptedCAs[${i}].crt`) }));
  if (accepted.length === 0) throw new Error("missing accepted Kubernetes CAs");
  const token = splitToken(c.token);
  return { endpoint, bootstrapTokenID: token.id, bootstrapTokenSecret: token.secret, acceptedCAs: accepted };
}
