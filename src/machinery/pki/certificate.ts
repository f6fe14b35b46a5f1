/**
 * The one certificate builder every issuing helper goes through, so all certificates share upstream's shape:
 * random 128-bit serial, KeyUsage critical, CA certificates with BasicConstraints + random SubjectKeyId, leaves with
 * an AuthorityKeyId pointing at the issuer and no BasicConstraints (as Go's x509.CreateCertificate writes them).
 */
import { randomBytes, type KeyObject } from "node:crypto";
import { x509 } from "./provider.js";
import { signingAlgorithm, spkiDer, toSigningKey } from "./keys.js";
import { encodePem, PemLabel } from "./pem.js";

export const KeyUsage = x509.KeyUsageFlags;

export const ExtKeyUsage = {
  ServerAuth: "1.3.6.1.5.5.7.3.1",
  ClientAuth: "1.3.6.1.5.5.7.3.2",
} as const;

/** Subject as Go's pkix.Name: all Organization values in one RDN, then the CommonName. */
export interface Subject {
  organizations?: string[];
  commonName?: string;
}

export interface CertificateSpec {
  subject: Subject;
  /** Key whose public half goes into the certificate. */
  subjectKey: KeyObject;
  /** Issuer certificate; omitted for self-signed. */
  issuer?: x509.X509Certificate;
  /** Key that signs (the issuer's, or subjectKey when self-signed). */
  signer: KeyObject;
  notBefore: Date;
  notAfter: Date;
  isCA: boolean;
  keyUsage: number;
  extKeyUsage: string[];
  ipSANs?: string[];
  dnsSANs?: string[];
}

export async function createCertificate(spec: CertificateSpec): Promise<string> {
  const name = subjectName(spec.subject);
  const exts: x509.Extension[] = [new x509.KeyUsagesExtension(spec.keyUsage, true)];
  if (spec.extKeyUsage.length) exts.push(new x509.ExtendedKeyUsageExtension(spec.extKeyUsage, false));
  if (spec.isCA) {
    exts.push(new x509.BasicConstraintsExtension(true, undefined, true));
    // upstream uses 20 random bytes instead of a SHA-1 of the key (FIPS); any unique value is valid per RFC 5280
    exts.push(new x509.SubjectKeyIdentifierExtension(randomBytes(20).toString("hex")));
  }
  const issuerSki = spec.issuer?.getExtension(x509.SubjectKeyIdentifierExtension);
  if (spec.issuer && issuerSki) exts.push(new x509.AuthorityKeyIdentifierExtension(issuerSki.keyId));
  const sans = sanEntries(spec.ipSANs ?? [], spec.dnsSANs ?? []);
  // SAN is critical only when the subject is empty (RFC 5280 4.2.1.6), which is what Go does too
  if (sans.length) exts.push(new x509.SubjectAlternativeNameExtension(sans, name.length === 0));

  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomBytes(16).toString("hex"),
    subject: name,
    issuer: spec.issuer ? spec.issuer.subjectName : name,
    notBefore: spec.notBefore,
    notAfter: spec.notAfter,
    publicKey: spkiDer(spec.subjectKey),
    signingKey: await toSigningKey(spec.signer),
    signingAlgorithm: signingAlgorithm(spec.signer),
    extensions: exts,
  });
  return encodePem(PemLabel.Certificate, new Uint8Array(cert.rawData));
}

function subjectName(s: Subject): x509.JsonName {
  const name: x509.JsonName = [];
  const orgs = (s.organizations ?? []).filter((o) => o !== "");
  if (orgs.length) name.push({ O: orgs });
  if (s.commonName) name.push({ CN: [s.commonName] });
  return name;
}

function sanEntries(ips: string[], dns: string[]): x509.JsonGeneralName[] {
  return [
    ...dedupe(dns).map((value) => ({ type: "dns" as const, value })),
    ...dedupe(ips).map((value) => ({ type: "ip" as const, value })),
  ];
}

function dedupe(list: string[]): string[] {
  return [...new Set(list.filter((v) => v !== ""))];
}

export function parseCertificate(pem: string): x509.X509Certificate {
  return new x509.X509Certificate(pem);
}
