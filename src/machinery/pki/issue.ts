/**
 * Leaf certificates. The leaf key always has the CA's algorithm (upstream's x509.NewKeyPair picks it from the CA
 * signature algorithm), so OS-CA leaves are Ed25519 and etcd/Kubernetes leaves are ECDSA P-256.
 */
import { createCertificate, ExtKeyUsage, KeyUsage, type Subject } from "./certificate.js";
import { loadCA, type CertAndKey } from "./ca.js";
import { newPrivateKey } from "./keys.js";
import { encodePrivateKeyPem, keyAlgorithm } from "./pem.js";

export const HOUR_MS = 3_600_000;
/** siderolabs/crypto DefaultCertificateValidityDuration. */
export const DEFAULT_CERT_VALIDITY_MS = 24 * HOUR_MS;
/** TalosAPIDefaultCertificateValidityDuration (talosconfig client certificates). */
export const CLIENT_CERT_VALIDITY_MS = 8_760 * HOUR_MS;
/** etcd certificates are issued for 87600h. */
export const ETCD_CERT_VALIDITY_MS = 87_600 * HOUR_MS;
/** Kubernetes admin kubeconfig certificates: 1 year, backdated for clock skew like upstream. */
export const K8S_ADMIN_CERT_VALIDITY_MS = 8_760 * HOUR_MS;
const K8S_ALLOWED_SKEW_MS = 10_000;

export interface LeafOptions {
  subject: Subject;
  extKeyUsage: string[];
  keyUsage?: number;
  ipSANs?: string[];
  dnsSANs?: string[];
  validityMs: number;
  notBefore?: Date;
}

/** Issues a leaf from `ca` with a fresh key of the CA's algorithm. */
export async function issueLeaf(ca: CertAndKey, opts: LeafOptions): Promise<CertAndKey> {
  const loaded = loadCA(ca);
  const key = await newPrivateKey(keyAlgorithm(loaded.key));
  const notBefore = opts.notBefore ?? new Date();
  const crt = await createCertificate({
    subject: opts.subject,
    subjectKey: key,
    issuer: loaded.cert,
    signer: loaded.key,
    notBefore,
    notAfter: new Date(Date.now() + opts.validityMs),
    isCA: false,
    keyUsage: opts.keyUsage ?? KeyUsage.digitalSignature,
    extKeyUsage: opts.extKeyUsage,
    ipSANs: opts.ipSANs,
    dnsSANs: opts.dnsSANs,
  });
  return { crt, key: encodePrivateKeyPem(key) };
}

export interface ServerCertOptions {
  commonName?: string;
  ipSANs?: string[];
  dnsSANs?: string[];
  validityMs?: number;
}

/** apid server certificate: KeyUsage digitalSignature, EKU serverAuth only, 24 h by default. */
export function issueServerCert(ca: CertAndKey, opts: ServerCertOptions): Promise<CertAndKey> {
  return issueLeaf(ca, {
    subject: { commonName: opts.commonName },
    extKeyUsage: [ExtKeyUsage.ServerAuth],
    ipSANs: opts.ipSANs,
    dnsSANs: opts.dnsSANs,
    validityMs: opts.validityMs ?? DEFAULT_CERT_VALIDITY_MS,
  });
}

export interface ClientCertOptions {
  roles: string[];
  commonName?: string;
  validityMs?: number;
}

/** Talos API client certificate: O = sorted roles, EKU clientAuth only (apid rejects anything else). */
export function issueClientCert(ca: CertAndKey, opts: ClientCertOptions): Promise<CertAndKey> {
  const roles = [...new Set(opts.roles.map((r) => r.trim()).filter((r) => r !== ""))].sort();
  return issueLeaf(ca, {
    subject: { organizations: roles, commonName: opts.commonName },
    extKeyUsage: [ExtKeyUsage.ClientAuth],
    validityMs: opts.validityMs ?? CLIENT_CERT_VALIDITY_MS,
  });
}

export interface EtcdCertOptions {
  hostname: string;
  /** Node addresses; the server certificate adds 127.0.0.1 and ::1. */
  addresses: string[];
  /** Hostname DNS names (hostname and FQDN); the server certificate adds localhost. */
  dnsNames: string[];
}

const ETCD_KEY_USAGE = KeyUsage.digitalSignature | KeyUsage.keyEncipherment;

/** etcd peer certificate: CN=hostname, node IPs and names, EKU serverAuth+clientAuth. */
export function issueEtcdPeerCert(etcdCA: CertAndKey, opts: EtcdCertOptions): Promise<CertAndKey> {
  return issueLeaf(etcdCA, {
    subject: { commonName: opts.hostname },
    keyUsage: ETCD_KEY_USAGE,
    extKeyUsage: [ExtKeyUsage.ServerAuth, ExtKeyUsage.ClientAuth],
    ipSANs: opts.addresses,
    dnsSANs: opts.dnsNames,
    validityMs: ETCD_CERT_VALIDITY_MS,
  });
}

/** etcd client-port certificate: like the peer one plus loopback, so local clients can dial 127.0.0.1/localhost. */
export function issueEtcdServerCert(etcdCA: CertAndKey, opts: EtcdCertOptions): Promise<CertAndKey> {
  return issueLeaf(etcdCA, {
    subject: { commonName: opts.hostname },
    keyUsage: ETCD_KEY_USAGE,
    extKeyUsage: [ExtKeyUsage.ServerAuth, ExtKeyUsage.ClientAuth],
    ipSANs: [...opts.addresses, "127.0.0.1", "::1"],
    dnsSANs: [...opts.dnsNames, "localhost"],
    validityMs: ETCD_CERT_VALIDITY_MS,
  });
}

/** etcd client certificate (e.g. CN=talos for machined's own etcd client): clientAuth only, no SANs. */
export function issueEtcdClientCert(etcdCA: CertAndKey, commonName: string): Promise<CertAndKey> {
  return issueLeaf(etcdCA, {
    subject: { commonName },
    keyUsage: ETCD_KEY_USAGE,
    extKeyUsage: [ExtKeyUsage.ClientAuth],
    validityMs: ETCD_CERT_VALIDITY_MS,
  });
}

export interface K8sAdminCertOptions {
  commonName?: string;
  organization?: string;
  validityMs?: number;
}

/** Kubernetes admin client certificate for `talosctl kubeconfig`: O=system:masters, CN=admin, clientAuth. */
export function issueKubernetesAdminCert(k8sCA: CertAndKey, opts: K8sAdminCertOptions = {}): Promise<CertAndKey> {
  return issueLeaf(k8sCA, {
    subject: { organizations: [opts.organization ?? "system:masters"], commonName: opts.commonName ?? "admin" },
    keyUsage: KeyUsage.digitalSignature | KeyUsage.keyEncipherment,
    extKeyUsage: [ExtKeyUsage.ClientAuth],
    notBefore: new Date(Date.now() - K8S_ALLOWED_SKEW_MS),
    validityMs: opts.validityMs ?? K8S_ADMIN_CERT_VALIDITY_MS,
  });
}
