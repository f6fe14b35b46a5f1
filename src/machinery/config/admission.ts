/**
 * Admission: everything the node will need to build its API identity from a config, checked before the config is
 * stored, so that an accepted config can never make the node unreachable.
 *
 * From a config the API (src/api/identity.ts) takes `machine.ca.crt` (the CA it trusts for client certificates and
 * names as issuer), `machine.ca.key` (when present, it signs a fresh server certificate; when absent the node waits
 * for one), `machine.certSANs` (strings that look like IPv4 or contain ":" become IP SANs, the rest DNS SANs) and
 * `machine.network.hostname` (common name and a DNS SAN). Each way that could fail, or produce a certificate clients
 * reject, is a problem here:
 *  - the CA certificate missing, not base64 of exactly one PEM CERTIFICATE block, unparsable (node:crypto,
 *    @peculiar/x509, or Go's stricter parser: talosctl holds the same CA in its talosconfig), with a subject that
 *    does not re-encode to the same bytes (Go chains a leaf to its CA by comparing those bytes), too large for the
 *    handshake, not a CA (basicConstraints, keyCertSign), with an extended key usage or critical extension that
 *    fails verification, expired or not yet valid;
 *  - the CA key unparsable, of an algorithm or size the issuer cannot sign with (Ed25519, ECDSA P-256, RSA
 *    2048–8192 bits), or not the key of the certificate (clients would reject every server certificate);
 *  - a SAN that is not a valid IP address where the issuer would treat it as one (`999.999.999.999`, `::::`,
 *    `fd00::/64`, zone ids and IPv4-in-IPv6 forms, which the encoder silently mangles), or not a DNS name (Go's
 *    TLS client refuses a certificate whose DNS SAN is not ASCII);
 *  - more SANs, or more SAN text, than fits a TLS handshake comfortably (limits.ts).
 * Other certificate/key pairs in the config (Kubernetes, etcd, aggregator CAs, service account key, accepted CAs)
 * are checked to parse and match, so a bad one is an InvalidArgument naming its path instead of a later failure.
 *
 * test/machinery/config/admission-identity.test.ts runs the real issuance path on every config admitted here.
 */
import { X509Certificate, type KeyObject } from "node:crypto";
import { parseIPv4, parseIPv6 } from "./net.js";
import { x509 } from "../pki/provider.js";
import { ExtKeyUsage } from "../pki/certificate.js";
import { decodePem, keyAlgorithm, parsePrivateKeyPem, PemLabel } from "../pki/pem.js";
import { goCertificateParts } from "../pki/verify.js";
import { formatBytes, LIMITS } from "./limits.js";
import type { MachineConfig } from "./machineconfig.js";
import { ConfigValidationError } from "./errors.js";
import { Report } from "./validate/report.js";

export interface AdmissionOptions {
  /** The node's clock, for CA validity. */
  now?: Date;
}

/** The rule identity.ts uses to split certSANs into IP and DNS SANs; admission must classify exactly like it. */
export function looksLikeIP(s: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(s) || s.includes(":");
}

/** Why `s` is not a valid IP SAN, or undefined. */
export function ipProblem(s: string): string | undefined {
  if (s.includes("%")) return "is an IP address with a zone id, which a certificate cannot carry";
  const v = parseIPv4(s) ? 4 : parseIPv6(s) ? 6 : 0;
  if (v === 0) return "is not a valid IP address";
  if (v === 6 && s.includes(".")) return "is an IPv6 address with an embedded IPv4 part; write it in hexadecimal groups only";
  return undefined;
}

const LABEL = /^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?$/;

/** Why `s` is not a DNS name a certificate can carry (ASCII labels of letters, digits, `-`, `_`), or undefined. */
export function dnsNameProblem(s: string, allowWildcard: boolean): string | undefined {
  if (s.length > 253) return `is ${s.length} characters long; a DNS name has at most 253`;
  let name = s.endsWith(".") ? s.slice(0, -1) : s;
  if (allowWildcard && name.startsWith("*.")) name = name.slice(2);
  if (name === "") return "is not a DNS name";
  for (const label of name.split(".")) {
    if (label.length > 63) return "has a label longer than 63 characters";
    if (!LABEL.test(label)) return "is not a valid DNS name (letters, digits, '-' and '_' in dot-separated labels)";
  }
  return undefined;
}

/** Extensions Go and OpenSSL both understand, so a critical one does not fail verification. */
const HANDLED_CRITICAL = new Set([
  "2.5.29.14", "2.5.29.15", "2.5.29.17", "2.5.29.19", "2.5.29.30", "2.5.29.31", "2.5.29.32", "2.5.29.35", "2.5.29.37",
]);
const ANY_EKU = "2.5.29.37.0";

const show = (s: string) => JSON.stringify(s.length > 64 ? `${s.slice(0, 64)}…` : s);

function fromB64(s: string): string {
  return Buffer.from(s, "base64").toString("utf8");
}

/** PEM blocks are counted before any is parsed: the PEM regex rescans the rest of the text per block. */
function countBegins(text: string): number {
  let n = 0;
  for (let i = text.indexOf("-----BEGIN "); i >= 0; i = text.indexOf("-----BEGIN ", i + 1)) n++;
  return n;
}

/** One certificate PEM from a base64 field; reports and returns undefined when it is not exactly that. */
function certificateAt(b64: string, path: string, r: Report): { node: X509Certificate; peculiar: x509.X509Certificate } | undefined {
  const text = fromB64(b64);
  const begins = countBegins(text);
  if (begins > 1) {
    r.error(path, `expected exactly one PEM certificate block, found ${begins}`);
    return undefined;
  }
  const block = begins === 1 ? decodePem(text) : undefined;
  if (!block) {
    r.error(path, "not a PEM certificate (expected base64 of a '-----BEGIN CERTIFICATE-----' block)");
    return undefined;
  }
  if (block.label !== PemLabel.Certificate) {
    r.error(path, `expected a CERTIFICATE PEM block, found ${show(block.label)}`);
    return undefined;
  }
  try {
    const node = new X509Certificate(text);
    const peculiar = new x509.X509Certificate(text);
    return { node, peculiar };
  } catch (e) {
    r.error(path, `failed to parse the certificate: ${(e as Error).message}`);
    return undefined;
  }
}

function privateKeyAt(b64: string, path: string, r: Report): KeyObject | undefined {
  const text = fromB64(b64);
  const begins = countBegins(text);
  if (begins !== 1) {
    r.error(path, begins === 0 ? "not a PEM private key (expected base64 of a '-----BEGIN ... PRIVATE KEY-----' block)" : `expected exactly one PEM key block, found ${begins}`);
    return undefined;
  }
  try {
    return parsePrivateKeyPem(text);
  } catch (e) {
    r.error(path, (e as Error).message);
    return undefined;
  }
}

/** Why `key` cannot sign certificates the way the issuer does (src/machinery/pki/keys.ts), or undefined. */
function signingKeyProblem(key: KeyObject): string | undefined {
  let alg: string;
  try {
    alg = keyAlgorithm(key);
  } catch {
    return `unsupported key type ${show(String(key.asymmetricKeyType))} (Ed25519, ECDSA P-256 and RSA keys are supported)`;
  }
  const d = key.asymmetricKeyDetails ?? {};
  if (alg === "ecdsa" && d.namedCurve !== "prime256v1" && d.namedCurve !== "P-256") {
    return `an ECDSA key on curve ${show(String(d.namedCurve))}; only P-256 is supported`;
  }
  if (alg === "rsa") {
    const bits = d.modulusLength ?? 0;
    if (bits < LIMITS.rsaMinBits || bits > LIMITS.rsaMaxBits) {
      return `a ${bits}-bit RSA key; RSA CA keys must have ${LIMITS.rsaMinBits} to ${LIMITS.rsaMaxBits} bits`;
    }
  }
  return undefined;
}

/** The OS CA: what the API serves and verifies clients with. */
function checkOsCA(cfg: MachineConfig, now: Date, r: Report): void {
  const m = cfg.machine;
  if (!m) return;
  const crt = m.ca?.crt;
  const key = m.ca?.key;
  if (!crt) {
    // Without machine.ca the config has no v1alpha1 CA at all (validation reports it), or only acceptedCAs.
    if ((m.acceptedCAs?.length ?? 0) > 0) {
      r.error("machine.ca.crt", "the OS CA certificate is required: this node authenticates API clients with machine.ca only (machine.acceptedCAs alone are not supported yet)");
    }
    if (key) r.error("machine.ca.key", "a CA key without machine.ca.crt");
    return;
  }
  const cert = certificateAt(crt, "machine.ca.crt", r);
  if (cert) {
    const der = cert.node.raw.byteLength;
    if (der > LIMITS.caCertBytes) {
      r.error("machine.ca.crt", `the certificate is ${formatBytes(der)}; an OS CA certificate may be at most ${formatBytes(LIMITS.caCertBytes)} (its subject is sent in every TLS handshake)`);
    }
    const go = goCertificateParts(cert.node.raw);
    if ("problem" in go) {
      r.error("machine.ca.crt", `Go clients such as talosctl would refuse the certificate (${go.problem})`);
      return;
    }
    // The issuer of every server certificate is this subject as the issuer re-encodes it; Go chains by bytes.
    if (!Buffer.from(cert.peculiar.subjectName.toArrayBuffer()).equals(go.subject)) {
      r.error("machine.ca.crt", "the CA's subject is not canonical DER, so certificates issued from it would not chain to it in Go clients");
    }
    for (const ext of cert.peculiar.extensions) {
      if (ext.critical && !HANDLED_CRITICAL.has(ext.type)) r.error("machine.ca.crt", `the certificate has an unsupported critical extension ${ext.type}`);
    }
    const eku = cert.node.keyUsage;
    if (eku && !eku.includes(ANY_EKU)) {
      for (const [oid, name] of [[ExtKeyUsage.ServerAuth, "serverAuth"], [ExtKeyUsage.ClientAuth, "clientAuth"]]) {
        if (!eku.includes(oid)) r.error("machine.ca.crt", `the CA's extended key usage lacks ${name}, which the API's certificates need`);
      }
    }
    // OpenSSL (the node verifying client certificates) only trusts a chain that ends in a self-issued certificate.
    if (!cert.node.checkIssued(cert.node)) {
      r.error("machine.ca.crt", "the CA certificate is not self-signed (its issuer or authority key id is not its own); the OS CA must be a root CA");
    }
    if (!cert.node.ca) r.error("machine.ca.crt", "not a CA certificate (basicConstraints CA:TRUE is missing), so client certificates cannot be verified against it");
    const ku = cert.peculiar.getExtension(x509.KeyUsagesExtension);
    if (ku && (ku.usages & x509.KeyUsageFlags.keyCertSign) === 0) {
      r.error("machine.ca.crt", "the CA certificate's key usage lacks keyCertSign, so certificates it signs are not accepted");
    }
    const { notBefore, notAfter } = cert.peculiar;
    if (now < notBefore) r.error("machine.ca.crt", `the CA certificate is not valid yet (notBefore ${notBefore.toISOString()}, this node's clock says ${now.toISOString()})`);
    if (now > notAfter) r.error("machine.ca.crt", `the CA certificate has expired (notAfter ${notAfter.toISOString()})`);
  }
  if (!key) return;
  const k = privateKeyAt(key, "machine.ca.key", r);
  if (!k) return;
  const bad = signingKeyProblem(k);
  if (bad) {
    r.error("machine.ca.key", bad);
    return;
  }
  if (cert && !cert.node.checkPrivateKey(k)) {
    r.error("machine.ca.key", "the key does not belong to machine.ca.crt: clients would reject every certificate the node issues");
  }
}

function checkSANs(cfg: MachineConfig, r: Report): void {
  const sans = (cfg.machine?.certSANs ?? []) as string[];
  let count = 0;
  let bytes = 0;
  sans.forEach((s, i) => {
    if (s === "") return;
    count++;
    bytes += s.length;
    if (count > LIMITS.certSANs || bytes > LIMITS.certSANsBytes) return;
    const bad = looksLikeIP(s) ? ipProblem(s) : dnsNameProblem(s, true);
    if (bad) r.error(`machine.certSANs[${i}]`, `${show(s)} ${bad}`);
  });
  if (count > LIMITS.certSANs) {
    r.error("machine.certSANs", `${count} entries; at most ${LIMITS.certSANs} fit in the API server certificate`);
  } else if (bytes > LIMITS.certSANsBytes) {
    r.error("machine.certSANs", `${formatBytes(bytes)} of names; at most ${formatBytes(LIMITS.certSANsBytes)} fit in the API server certificate (TLS handshake messages are limited to 64 KiB)`);
  }
  const host = cfg.hostname();
  if (host) {
    const bad = dnsNameProblem(host, false) ?? undefined;
    if (bad) r.error("machine.network.hostname", `${show(host)} ${bad}`);
  }
}

/** Other pairs: each certificate parses, each key parses, and a key matches its certificate. */
function checkOtherPairs(cfg: MachineConfig, r: Report): void {
  const c = cfg.cluster;
  const m = cfg.machine;
  const pairs: [string, { crt?: string; key?: string } | undefined][] = [
    ["cluster.ca", c?.ca],
    ["cluster.aggregatorCA", c?.aggregatorCA],
    ["cluster.etcd.ca", c?.etcd?.ca],
    ["cluster.serviceAccount", c?.serviceAccount],
    ...(m?.acceptedCAs ?? []).map((p, i) => [`machine.acceptedCAs[${i}]`, p] as [string, { crt?: string }]),
    ...(c?.acceptedCAs ?? []).map((p, i) => [`cluster.acceptedCAs[${i}]`, p] as [string, { crt?: string }]),
  ];
  for (const [path, pair] of pairs) {
    if (!pair) continue;
    const cert = pair.crt ? certificateAt(pair.crt, `${path}.crt`, r) : undefined;
    const key = pair.key ? privateKeyAt(pair.key, `${path}.key`, r) : undefined;
    if (cert && key && !cert.node.checkPrivateKey(key)) r.error(`${path}.key`, `the key does not belong to ${path}.crt`);
  }
}

/** Adds every admission problem of `cfg` to `r` (paths first, as validation does). */
export function checkAdmission(cfg: MachineConfig, r: Report, opts: AdmissionOptions = {}): void {
  if (!cfg.v1alpha1()) return;
  checkOsCA(cfg, opts.now ?? new Date(), r);
  checkSANs(cfg, r);
  checkOtherPairs(cfg, r);
}

/**
 * `cfg` when admission accepts it, else a ConfigValidationError listing why. For configs read back from disk at
 * boot: one stored before these checks existed, or whose CA has expired since, must leave the node in maintenance
 * mode (where any client may apply a new config) instead of failing to build the API identity and never listening.
 */
export function admitted(cfg: MachineConfig, opts: AdmissionOptions = {}): MachineConfig {
  const r = new Report();
  checkAdmission(cfg, r, opts);
  if (r.errors.length > 0) throw new ConfigValidationError(r.errors);
  return cfg;
}
