/**
 * Root secrets of the `secrets` namespace, derived from the machine config (upstream secrets.RootOSController
 * and secrets.RootKubernetesController). Both are sensitive: only os:admin may read them.
 *
 * PEM material renders as Go's x509.PEMEncoded* types do in YAML (`crt`/`key`: base64 of the PEM text); the
 * proto carries the PEM bytes.
 */
import { KubernetesRootSpecSchema, OSRootSpecSchema } from "../../api/gen/resource/definitions/secrets/secrets_pb.js";
import type { ResourceType } from "../resource.js";
import { defineType } from "./define.js";

export const SECRETS_NS = "secrets";

/** base64 of PEM text, as the machine config holds it. */
export interface PemCertAndKey {
  crt: string;
  key: string;
}

export interface PemCert {
  crt: string;
}

export interface OSRootSpec {
  /** null for a worker, whose config carries the CA certificate without its key (Go: nil pointer). */
  issuingCA: PemCertAndKey | null;
  acceptedCAs: PemCert[];
  certSANIPs: string[];
  certSANDNSNames: string[];
  token: string;
}

export const OSRootType = defineType<OSRootSpec>({
  type: "OSRootSecrets.secrets.talos.dev",
  namespace: SECRETS_NS,
  sensitive: true,
  schema: OSRootSpecSchema,
  keys: ["issuingCA", "acceptedCAs", "certSANIPs", "certSANDNSNames", "token"],
  proto: { fields: { issuingCA: "issuing_ca", acceptedCAs: "accepted_c_as", certSANIPs: "cert_sani_ps", certSANDNSNames: "cert_sandns_names" } },
});

export interface KubernetesRootSpec {
  name: string;
  endpoint: string;
  local_endpoint: string;
  certSANs: string[];
  apiServerIPs: string[];
  dnsDomain: string;
  issuingCA: PemCertAndKey | null;
  acceptedCAs: PemCert[];
  serviceAccount: { key: string } | null;
  aggregatorCA: PemCertAndKey | null;
  aesCBCEncryptionSecret: string;
  bootstrapTokenID: string;
  bootstrapTokenSecret: string;
  secretboxEncryptionSecret: string;
}

export const KubernetesRootType = defineType<KubernetesRootSpec>({
  type: "KubernetesRootSecrets.secrets.talos.dev",
  namespace: SECRETS_NS,
  sensitive: true,
  schema: KubernetesRootSpecSchema,
  keys: [
    "name", "endpoint", "local_endpoint", "certSANs", "apiServerIPs", "dnsDomain", "issuingCA", "acceptedCAs", "serviceAccount", "aggregatorCA",
    "aesCBCEncryptionSecret", "bootstrapTokenID", "bootstrapTokenSecret", "secretboxEncryptionSecret",
  ],
  proto: {
    fields: {
      certSANs: "cert_sa_ns",
      apiServerIPs: "api_server_ips",
      issuingCA: "issuing_ca",
      acceptedCAs: "accepted_c_as",
      aggregatorCA: "aggregator_ca",
      aesCBCEncryptionSecret: "aescbc_encryption_secret",
      bootstrapTokenID: "bootstrap_token_id",
    },
  },
});

export const SECRETS_TYPES = [OSRootType, KubernetesRootType] as ResourceType[];
