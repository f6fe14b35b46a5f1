/**
 * Certificate inspection with node:crypto (parsing, chain and validity) for the TLS layer and renewal decisions.
 * @peculiar/x509 is used only where node:crypto has no accessor (validity dates as Date, Organization values).
 */
import { createHash, X509Certificate } from "node:crypto";
import type { DetailedPeerCertificate, PeerCertificate } from "node:tls";
import { x509 } from "./provider.js";
import { ExtKeyUsage } from "./certificate.js";

/** Go's named ExtKeyUsage OIDs; unknown OIDs are ignored by Go's checks, so they are here too. */
const GO_KNOWN_EKU: Record<string, string> = {
  "2.5.29.37.0": "any",
  [ExtKeyUsage.ServerAuth]: "serverAuth",
  [ExtKeyUsage.ClientAuth]: "clientAuth",
  "1.3.6.1.5.5.7.3.3": "codeSigning",
  "1.3.6.1.5.5.7.3.4": "emailProtection",
  "1.3.6.1.5.5.7.3.5": "ipsecEndSystem",
  "1.3.6.1.5.5.7.3.6": "ipsecTunnel",
  "1.3.6.1.5.5.7.3.7": "ipsecUser",
  "1.3.6.1.5.5.7.3.8": "timeStamping",
  "1.3.6.1.5.5.7.3.9": "OCSPSigning",
  "1.3.6.1.4.1.311.10.3.3": "microsoftServerGatedCrypto",
  "2.16.840.1.113730.4.1": "netscapeServerGatedCrypto",
  "1.3.6.1.4.1.311.2.1.22": "microsoftCommercialCodeSigning",
  "1.3.6.1.4.1.311.61.1.1": "microsoftKernelCodeSigning",
};

type CertInput = string | X509Certificate;

const asX509 = (c: CertInput): X509Certificate => (typeof c === "string" ? new X509Certificate(c) : c);

/** Why `leaf` does not chain to `ca` at `at`, or undefined when it does (single-level chains, as Talos uses). */
export function chainProblem(leaf: CertInput, ca: CertInput, at: Date = new Date()): string | undefined {
  const l = asX509(leaf);
  const c = asX509(ca);
  if (!c.ca) return "issuer is not a CA certificate";
  if (!l.checkIssued(c)) return "certificate was not issued by this CA (issuer name or key identifier differ)";
  if (!l.verify(c.publicKey)) return "certificate signature does not verify with the CA key";
  for (const [what, cert] of [["certificate", l], ["CA certificate", c]] as const) {
    const { notBefore, notAfter } = validity(cert);
    if (at < notBefore) return `${what} is not valid yet (notBefore ${notBefore.toISOString()})`;
    if (at > notAfter) return `${what} has expired (notAfter ${notAfter.toISOString()})`;
  }
  return undefined;
}

export function verifyChain(leaf: CertInput, ca: CertInput, at?: Date): boolean {
  return chainProblem(leaf, ca, at) === undefined;
}

/** Extended key usages by name (serverAuth, clientAuth, ...); unknown ones as their OID. */
export function extKeyUsage(cert: CertInput): string[] {
  return (asX509(cert).keyUsage ?? []).map((oid) => GO_KNOWN_EKU[oid] ?? oid);
}

function knownEkuOids(oids: readonly string[] | undefined): string[] {
  return (oids ?? []).filter((oid) => oid in GO_KNOWN_EKU);
}

/** A chain element as node:tls or node:crypto presents it. */
type ChainCert = DetailedPeerCertificate | PeerCertificate | X509Certificate;

/** Walks leaf → issuers; node marks the root as its own issuer. */
function chainOf(peer: ChainCert): ChainCert[] {
  const out: ChainCert[] = [];
  let cur: ChainCert | undefined = peer;
  while (cur && !out.includes(cur) && out.length < 10) {
    out.push(cur);
    const next: ChainCert | undefined = (cur as { issuerCertificate?: ChainCert }).issuerCertificate;
    if (!next || next === cur) break;
    cur = next;
  }
  return out;
}

function isCA(c: ChainCert): boolean {
  return c instanceof X509Certificate ? c.ca : Boolean((c as PeerCertificate).ca);
}

function ekuOids(c: ChainCert): string[] | undefined {
  return c instanceof X509Certificate ? c.keyUsage : (c as PeerCertificate).ext_key_usage;
}

function subjectText(c: ChainCert): string {
  if (c instanceof X509Certificate) return c.subject.replace(/\n/g, ",");
  return Object.entries((c as PeerCertificate).subject ?? {})
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join("+") : String(v)}`)
    .join(",");
}

/**
 * Upstream apid's verifyExtKeyUsage: every non-CA certificate in the verified chain must carry exactly [clientAuth].
 * Returns the upstream error text, or undefined when the chain is acceptable.
 */
export function clientExtKeyUsageProblem(peer: ChainCert): string | undefined {
  for (const c of chainOf(peer)) {
    if (isCA(c)) continue;
    const known = knownEkuOids(ekuOids(c));
    if (known.length !== 1 || known[0] !== ExtKeyUsage.ClientAuth) {
      return `certificate "${subjectText(c)}" is missing the client auth extended key usage`;
    }
  }
  return undefined;
}

export function isExactlyClientAuth(peer: ChainCert): boolean {
  return clientExtKeyUsageProblem(peer) === undefined;
}

/** Organization values of a certificate's subject (the roles of a Talos client certificate), trimmed, non-empty. */
export function certOrganizations(cert: string | X509Certificate): string[] {
  const pem = typeof cert === "string" ? cert : cert.toString();
  return normalizeOrgs(new x509.X509Certificate(pem).subjectName.getField("O"));
}

/** Organization values from node:tls's peer certificate, where `O` is a string for one value, an array for several. */
export function peerOrganizations(peer: Pick<PeerCertificate, "subject">): string[] {
  const o = (peer.subject as unknown as Record<string, string | string[] | undefined> | undefined)?.O;
  return normalizeOrgs(o === undefined ? [] : Array.isArray(o) ? o : [o]);
}

function normalizeOrgs(values: string[]): string[] {
  return values.map((v) => v.trim()).filter((v) => v !== "");
}

/** base64 (std) SHA-256 of the SubjectPublicKeyInfo DER: the value `talosctl --cert-fingerprint` pins. */
export function spkiFingerprint(cert: CertInput): string {
  const spki = asX509(cert).publicKey.export({ type: "spki", format: "der" });
  return createHash("sha256").update(spki).digest("base64");
}

export function validity(cert: CertInput): { notBefore: Date; notAfter: Date } {
  const c = new x509.X509Certificate(asX509(cert).raw);
  return { notBefore: c.notBefore, notAfter: c.notAfter };
}

/** True when the certificate is already expired or expires within `ms` of `now`. */
export function expiresWithin(cert: CertInput, ms: number, now: number = Date.now()): boolean {
  return validity(cert).notAfter.getTime() - now <= ms;
}
