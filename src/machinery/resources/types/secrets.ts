/**
 * Resources of the `secrets` namespace (`*.secrets.talos.dev`): the roots taken from the machine config and the
 * certificates the node issues from them. Every one but CertSANs holds key material and is sensitive (admin only).
 *
 * Specs hold PEM text; the YAML rendering shows each PEM as base64, as Go's []byte fields render.
 */
import {
  APICertsSpecSchema,
  CertSANSpecSchema,
  EtcdCertsSpecSchema,
  EtcdRootSpecSchema,
  KubeletSpecSchema,
  KubernetesCertsSpecSchema,
  KubernetesDynamicCertsSpecSchema,
  KubernetesRootSpecSchema,
  OSRootSpecSchema,
  TrustdCertsSpecSchema,
} from "../../api/gen/resource/definitions/secrets/secrets_pb.js";
import { specToProto } from "../protoenc.js";
import type { ResourceType } from "../resource.js";
import { specToYaml } from "../yaml.js";

export const SECRETS_NS = "secrets";

/** A certificate and its key, PEM text. */
export interface PemPair {
  crt: string;
  key: string;
}

/** A certificate without its key, PEM text. */
export interface PemCert {
  crt: string;
}

const b64 = (s: string | undefined) => (s ? Buffer.from(s, "utf8").toString("base64") : undefined);

/** The YAML shape of a spec: every PEM field (crt/key, at any depth) as base64. */
function pemToBase64(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(pemToBase64);
  if (typeof v !== "object" || v === null) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = (k === "crt" || k === "key") && typeof x === "string" ? b64(x) : pemToBase64(x);
  return out;
}

const secretYaml = (s: unknown) => specToYaml(pemToBase64(s));

// ------------------------------------------------------------------------------------------------ roots

/** OSRootSecrets `os`: the Talos API CA (with its key on control planes only), accepted CAs, cert SANs, token. */
export interface OSRootSpec {
  /** Absent on workers: their config carries the CA certificate only. */
  issuingCA?: PemPair;
  acceptedCAs: PemCert[];
  certSANIPs: string[];
  certSANDNSNames: string[];
  /** machine.token: what trustd checks. */
  token: string;
}

export const OSRootType: ResourceType<OSRootSpec> = {
  type: "OSRootSecrets.secrets.talos.dev",
  defaultNamespace: SECRETS_NS,
  sensitive: true,
  toYaml: secretYaml,
  toProto: (s) => specToProto(OSRootSpecSchema, s, { fields: { certSANIPs: "cert_sani_ps", certSANDNSNames: "cert_sandns_names" } }),
};

/** EtcdRootSecrets `etcd`: cluster.etcd.ca (control planes). */
export interface EtcdRootSpec {
  etcdCA: PemPair;
}

export const EtcdRootType: ResourceType<EtcdRootSpec> = {
  type: "EtcdRootSecrets.secrets.talos.dev",
  defaultNamespace: SECRETS_NS,
  sensitive: true,
  toYaml: secretYaml,
  toProto: (s) => specToProto(EtcdRootSpecSchema, s),
};

/** KubernetesRootSecrets `k8s`: what the control plane's Kubernetes certificates and manifests are built from. */
export interface KubernetesRootSpec {
  name: string;
  endpoint: string;
  localEndpoint: string;
  certSANs: string[];
  dnsDomain: string;
  issuingCA?: PemPair;
  acceptedCAs: PemCert[];
  serviceAccount?: { key: string };
  aggregatorCA?: PemPair;
  aescbcEncryptionSecret: string;
  secretboxEncryptionSecret: string;
  bootstrapTokenID: string;
  bootstrapTokenSecret: string;
  apiServerIPs: string[];
}

export const KubernetesRootType: ResourceType<KubernetesRootSpec> = {
  type: "KubernetesRootSecrets.secrets.talos.dev",
  defaultNamespace: SECRETS_NS,
  sensitive: true,
  toYaml: secretYaml,
  toProto: (s) =>
    specToProto(KubernetesRootSpecSchema, s, {
      fields: { certSANs: "cert_sa_ns", aescbcEncryptionSecret: "aescbc_encryption_secret", apiServerIPs: "api_server_ips" },
    }),
};

// ------------------------------------------------------------------------------------------------ derived

/** CertSANs `api` (and `k8s`): the names a server certificate must carry, from the roots and the node's names. */
export interface CertSANSpec {
  ips: string[];
  dnsNames: string[];
  fqdn: string;
}

export const CertSANType: ResourceType<CertSANSpec> = {
  type: "CertSANs.secrets.talos.dev",
  defaultNamespace: SECRETS_NS,
  toProto: (s) => specToProto(CertSANSpecSchema, s, { fields: { ips: "i_ps" } }),
};

/** ApiCertificates `api`: the Talos API server certificate, the impersonator client certificate, accepted CAs. */
export interface APICertsSpec {
  /** Control planes: CN = FQDN, O = os:impersonator (for forwarding); workers have none. */
  client?: PemPair;
  server: PemPair;
  acceptedCAs: PemCert[];
  skipVerifyingClientCert?: boolean;
}

export const APICertsType: ResourceType<APICertsSpec> = {
  type: "ApiCertificates.secrets.talos.dev",
  defaultNamespace: SECRETS_NS,
  sensitive: true,
  toYaml: secretYaml,
  toProto: (s) => specToProto(APICertsSpecSchema, s, { fields: { acceptedCAs: "accepted_c_as" } }),
};

/** EtcdSecrets `etcd`: the etcd server, peer and client certificates this node uses. */
export interface EtcdCertsSpec {
  etcd: PemPair;
  etcdPeer: PemPair;
  /** CN "talos": machined's own etcd client. */
  etcdAdmin: PemPair;
  /** CN "kube-apiserver": the API server's etcd client. */
  etcdAPIServer: PemPair;
}

export const EtcdCertsType: ResourceType<EtcdCertsSpec> = {
  type: "EtcdSecrets.secrets.talos.dev",
  defaultNamespace: SECRETS_NS,
  sensitive: true,
  toYaml: secretYaml,
  toProto: (s) => specToProto(EtcdCertsSpecSchema, s, { fields: { etcdAPIServer: "etcd_api_server" } }),
};

/** KubeletSecrets `kubelet`: the API server the kubelet bootstraps against, the bootstrap token, accepted CAs. */
export interface KubeletSecretsSpec {
  endpoint: string;
  bootstrapTokenID: string;
  bootstrapTokenSecret: string;
  acceptedCAs: PemCert[];
}

export const KubeletSecretsType: ResourceType<KubeletSecretsSpec> = {
  type: "KubeletSecrets.secrets.talos.dev",
  defaultNamespace: SECRETS_NS,
  sensitive: true,
  toYaml: secretYaml,
  toProto: (s) => specToProto(KubeletSpecSchema, s, { fields: { acceptedCAs: "accepted_c_as" } }),
};

/** KubernetesSecrets `k8s-certs`: kubeconfigs of the control-plane components and the admin. */
export interface KubernetesCertsSpec {
  schedulerKubeconfig: string;
  controllerManagerKubeconfig: string;
  localhostAdminKubeconfig: string;
  adminKubeconfig: string;
}

export const KubernetesCertsType: ResourceType<KubernetesCertsSpec> = {
  type: "KubernetesSecrets.secrets.talos.dev",
  defaultNamespace: SECRETS_NS,
  sensitive: true,
  toProto: (s) => specToProto(KubernetesCertsSpecSchema, s),
};

/** KubernetesDynamicCerts `k8s-dynamic-certs`: certificates that carry node names (API server, its kubelet client, front proxy). */
export interface KubernetesDynamicCertsSpec {
  apiServer: PemPair;
  apiServerKubeletClient: PemPair;
  frontProxy: PemPair;
}

export const KubernetesDynamicCertsType: ResourceType<KubernetesDynamicCertsSpec> = {
  type: "KubernetesDynamicCerts.secrets.talos.dev",
  defaultNamespace: SECRETS_NS,
  sensitive: true,
  toYaml: secretYaml,
  toProto: (s) => specToProto(KubernetesDynamicCertsSpecSchema, s),
};

/** TrustdCertificates `trustd`: trustd's server certificate (control planes). */
export interface TrustdCertsSpec {
  server: PemPair;
  acceptedCAs: PemCert[];
}

export const TrustdCertsType: ResourceType<TrustdCertsSpec> = {
  type: "TrustdCertificates.secrets.talos.dev",
  defaultNamespace: SECRETS_NS,
  sensitive: true,
  toYaml: secretYaml,
  toProto: (s) => specToProto(TrustdCertsSpecSchema, s, { fields: { acceptedCAs: "accepted_c_as" } }),
};

export const SECRET_IDS = {
  os: "os",
  etcd: "etcd",
  k8s: "k8s",
  api: "api",
  kubelet: "kubelet",
  k8sCerts: "k8s-certs",
  k8sDynamicCerts: "k8s-dynamic-certs",
  trustd: "trustd",
} as const;

export const SECRETS_TYPES: ResourceType[] = [
  OSRootType,
  EtcdRootType,
  KubernetesRootType,
  CertSANType,
  APICertsType,
  EtcdCertsType,
  KubeletSecretsType,
  KubernetesCertsType,
  KubernetesDynamicCertsType,
  TrustdCertsType,
] as ResourceType[];
