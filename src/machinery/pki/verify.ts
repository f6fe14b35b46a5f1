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

/** One DER element: tag, where its contents start and end (exclusive), and where the element started. */
interface Tlv {
  tag: number;
  start: number;
  end: number;
  from: number;
}

class DerError extends Error {}

/** Reads the element at `off` with Go's cryptobyte rules: single-byte tags, definite minimal lengths. */
function readTlv(b: Uint8Array, off: number, limit = b.length): Tlv {
  if (off + 2 > limit) throw new DerError("truncated element");
  const tag = b[off];
  if ((tag & 0x1f) === 0x1f) throw new DerError("high tag number");
  let len = b[off + 1];
  let start = off + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || start + n > limit) throw new DerError("bad length");
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + b[start + i];
    if (len < 128 || (n > 1 && b[start] === 0)) throw new DerError("non-minimal length");
    start += n;
  }
  if (start + len > limit) throw new DerError("truncated element");
  return { tag, start, end: start + len, from: off };
}

function expectTag(t: Tlv, tag: number, what: string): Tlv {
  if (t.tag !== tag) throw new DerError(`malformed ${what}`);
  return t;
}

const PRINTABLE = /^[A-Za-z0-9'()+,\-./:=? *&]*$/;

/** Go's parseASN1String: which string types a Name may hold and what each may contain. */
function nameValueProblem(tag: number, v: Uint8Array): string | undefined {
  const s = Buffer.from(v).toString("latin1");
  switch (tag) {
    case 0x14: // T61String, read as Latin-1
      return undefined;
    case 0x13:
      return PRINTABLE.test(s) ? undefined : "invalid PrintableString";
    case 0x0c:
      try {
        new TextDecoder("utf-8", { fatal: true }).decode(v);
        return undefined;
      } catch {
        return "invalid UTF-8 string";
      }
    case 0x1e: {
      if (v.length % 2 !== 0) return "invalid BMPString";
      for (let i = 0; i + 1 < v.length; i += 2) {
        const p = (v[i] << 8) | v[i + 1];
        if (p === 0xfffe || p === 0xffff || (p >= 0xfdd0 && p <= 0xfdef) || (p >= 0xd800 && p <= 0xdfff)) return "invalid BMPString";
      }
      return undefined;
    }
    case 0x16:
      return /^[\x00-\x7f]*$/.test(s) ? undefined : "invalid IA5String";
    case 0x12:
      return /^[0-9 ]*$/.test(s) ? undefined : "invalid NumericString";
    default:
      return `unsupported string type: ${tag}`;
  }
}

function checkName(b: Uint8Array, name: Tlv, what: string): void {
  expectTag(name, 0x30, what);
  for (let p = name.start; p < name.end; ) {
    const set = expectTag(readTlv(b, p, name.end), 0x31, what);
    for (let q = set.start; q < set.end; ) {
      const atv = expectTag(readTlv(b, q, set.end), 0x30, what);
      const oid = expectTag(readTlv(b, atv.start, atv.end), 0x06, what);
      const value = readTlv(b, oid.end, atv.end);
      const bad = nameValueProblem(value.tag, b.subarray(value.start, value.end));
      if (bad) throw new DerError(`invalid ${what}: ${bad}`);
      q = atv.end;
    }
    p = set.end;
  }
}

function checkTime(b: Uint8Array, t: Tlv): void {
  const s = Buffer.from(b.subarray(t.start, t.end)).toString("latin1");
  const m = t.tag === 0x17 ? /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})?Z$/.exec(s) : t.tag === 0x18 ? /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(s) : null;
  if (!m) throw new DerError(t.tag === 0x17 ? "malformed UTCTime" : t.tag === 0x18 ? "malformed GeneralizedTime" : "unsupported time format");
  const [year, month, day, hour, minute, second] = m.slice(1).map((x) => Number(x ?? 0));
  const fullYear = t.tag === 0x17 ? (year >= 50 ? 1900 + year : 2000 + year) : year;
  const days = new Date(Date.UTC(fullYear, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > days || hour > 23 || minute > 59 || second > 59) {
    throw new DerError(t.tag === 0x17 ? "malformed UTCTime" : "malformed GeneralizedTime");
  }
}

export interface TbsParts {
  /** The DER of the issuer and subject Names, as Go compares them when building chains. */
  issuer: Uint8Array;
  subject: Uint8Array;
}

/**
 * Parses the parts of a certificate's DER that Go's x509 parser (talosctl, kubectl) is stricter about than
 * OpenSSL: minimal lengths, a non-negative minimally encoded serial, the same signature algorithm inside and outside
 * the signed part, well-formed validity times, and Name values of the string types Go reads. Returns the raw issuer and subject, or the reason Go would refuse the certificate.
 */
export function goCertificateParts(der: Uint8Array): TbsParts | { problem: string } {
  try {
    const cert = expectTag(readTlv(der, 0), 0x30, "certificate");
    if (cert.end !== der.length) throw new DerError("trailing data after the certificate");
    const tbs = expectTag(readTlv(der, cert.start, cert.end), 0x30, "TBSCertificate");
    let p = tbs.start;
    let t = readTlv(der, p, tbs.end);
    if (t.tag === 0xa0) {
      p = t.end;
      t = readTlv(der, p, tbs.end);
    }
    const serial = expectTag(t, 0x02, "serial number");
    const sb = der.subarray(serial.start, serial.end);
    if (sb.length === 0 || (sb.length > 1 && ((sb[0] === 0 && !(sb[1] & 0x80)) || (sb[0] === 0xff && sb[1] & 0x80)))) {
      throw new DerError("malformed serial number");
    }
    if (sb[0] & 0x80) throw new DerError("negative serial number");
    const sigAlg = expectTag(readTlv(der, serial.end, tbs.end), 0x30, "signature algorithm");
    const issuer = readTlv(der, sigAlg.end, tbs.end);
    checkName(der, issuer, "issuer");
    const validity = expectTag(readTlv(der, issuer.end, tbs.end), 0x30, "validity");
    const notBefore = readTlv(der, validity.start, validity.end);
    checkTime(der, notBefore);
    checkTime(der, readTlv(der, notBefore.end, validity.end));
    const subject = readTlv(der, validity.end, tbs.end);
    checkName(der, subject, "subject");
    const outerAlg = expectTag(readTlv(der, tbs.end, cert.end), 0x30, "signature algorithm");
    if (!Buffer.from(der.subarray(outerAlg.from, outerAlg.end)).equals(der.subarray(sigAlg.from, sigAlg.end))) {
      throw new DerError("inner and outer signature algorithm identifiers don't match");
    }
    return { issuer: der.subarray(issuer.from, issuer.end), subject: der.subarray(subject.from, subject.end) };
  } catch (e) {
    if (e instanceof DerError) return { problem: e.message };
    throw e;
  }
}
