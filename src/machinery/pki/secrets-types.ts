/** The secrets bundle shape, on its own so the generate, load and extract files can share it without a cycle. */
import type { CertAndKey } from "./ca.js";

/** Cluster secrets as `talosctl gen secrets` stores them; PEM values are plain PEM text here (base64 on disk). */
export interface SecretsBundle {
  cluster: { id: string; secret: string };
  secrets: { bootstrapToken: string; secretboxEncryptionSecret?: string; aescbcEncryptionSecret?: string };
  trustdInfo: { token: string };
  certs: {
    etcd: CertAndKey;
    k8s: CertAndKey;
    k8sAggregator: CertAndKey;
    k8sServiceAccount: { key: string };
    os: CertAndKey;
  };
}
