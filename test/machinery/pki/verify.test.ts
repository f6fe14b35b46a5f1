import { X509Certificate } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import {
  chainProblem, clientExtKeyUsageProblem, certOrganizations, expiresWithin, extKeyUsage, issueClientCert,
  issueServerCert, isExactlyClientAuth, newSelfSignedCA, newTalosCA, peerOrganizations, spkiFingerprint, validity,
  verifyChain, type CertAndKey,
} from "../../../src/machinery/pki/index.js";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hasOpenssl, sh } from "./helpers.js";

let ca: CertAndKey;
let server: CertAndKey;
let client: CertAndKey;

beforeAll(async () => {
  ca = await newTalosCA();
  [server, client] = await Promise.all([
    issueServerCert(ca, { commonName: "n1", ipSANs: ["127.0.0.1"] }),
    issueClientCert(ca, { roles: ["os:admin"] }),
  ]);
});

describe("verification helpers", () => {
  it("explains why a chain does not verify", async () => {
    expect(chainProblem(server.crt, ca.crt)).toBeUndefined();
    expect(chainProblem(server.crt, server.crt)).toBe("issuer is not a CA certificate");
    const other = await newTalosCA();
    // same subject (O=talos), different key: the authority key identifier gives it away
    expect(chainProblem(server.crt, other.crt)).toBe(
      "certificate was not issued by this CA (issuer name or key identifier differ)",
    );
    const later = new Date(Date.now() + 48 * 3_600_000);
    expect(chainProblem(server.crt, ca.crt, later)).toMatch(/^certificate has expired/);
    expect(verifyChain(server.crt, ca.crt, new Date(Date.now() - 3_600_000))).toBe(false);
  });

  it("notices a CA that has expired", async () => {
    const shortCA = await newSelfSignedCA({ subject: { organizations: ["talos"] }, algorithm: "ed25519", validityMs: 60_000 });
    const leaf = await issueServerCert(shortCA, { commonName: "x" });
    expect(chainProblem(leaf.crt, shortCA.crt, new Date(Date.now() + 120_000))).toMatch(/^(certificate|CA certificate) has expired/);
  });

  it("names extended key usages", () => {
    expect(extKeyUsage(server.crt)).toEqual(["serverAuth"]);
    expect(extKeyUsage(ca.crt)).toEqual(["serverAuth", "clientAuth"]);
  });

  it("accepts a client chain only when every non-CA certificate is exactly clientAuth (upstream verifyExtKeyUsage)", () => {
    const leaf = new X509Certificate(client.crt);
    expect(isExactlyClientAuth(leaf)).toBe(true);
    expect(isExactlyClientAuth(new X509Certificate(server.crt))).toBe(false);
    expect(clientExtKeyUsageProblem(new X509Certificate(server.crt))).toBe(
      'certificate "CN=n1" is missing the client auth extended key usage',
    );
    // CA certificates in the chain are skipped even though they carry serverAuth too
    expect(isExactlyClientAuth(new X509Certificate(ca.crt))).toBe(true);
    // node:tls peer certificate objects (with an issuer link) are walked the same way
    const caPeer = { ca: true, ext_key_usage: ["1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2"], subject: { O: "talos" } };
    const asPeer = (eku: string[]) => ({ ca: false, ext_key_usage: eku, subject: { O: "os:admin" }, issuerCertificate: caPeer });
    Object.assign(caPeer, { issuerCertificate: caPeer });
    expect(isExactlyClientAuth(asPeer(["1.3.6.1.5.5.7.3.2"]) as never)).toBe(true);
    expect(isExactlyClientAuth(asPeer(["1.3.6.1.5.5.7.3.2", "1.3.6.1.5.5.7.3.1"]) as never)).toBe(false);
    expect(isExactlyClientAuth(asPeer([]) as never)).toBe(false);
    // an intermediate without clientAuth fails the chain
    const inter = { ca: false, ext_key_usage: ["1.3.6.1.5.5.7.3.1"], subject: { CN: "i" }, issuerCertificate: caPeer };
    const leafPeer = { ca: false, ext_key_usage: ["1.3.6.1.5.5.7.3.2"], subject: { O: "os:admin" }, issuerCertificate: inter };
    expect(clientExtKeyUsageProblem(leafPeer as never)).toBe('certificate "CN=i" is missing the client auth extended key usage');
  });

  it("reads organizations from PEM and from node:tls peer objects", () => {
    expect(certOrganizations(client.crt)).toEqual(["os:admin"]);
    expect(certOrganizations(server.crt)).toEqual([]);
    expect(peerOrganizations({ subject: { O: "os:admin" } as never })).toEqual(["os:admin"]);
    expect(peerOrganizations({ subject: { O: [" os:reader", "", "os:etcd:backup"] } as never })).toEqual([
      "os:reader",
      "os:etcd:backup",
    ]);
    expect(peerOrganizations({ subject: {} as never })).toEqual([]);
  });

  it("computes the SPKI fingerprint talosctl --cert-fingerprint expects", () => {
    const fp = spkiFingerprint(server.crt);
    expect(fp).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(spkiFingerprint(server.crt)).not.toBe(spkiFingerprint(client.crt));
    if (hasOpenssl) {
      // the pipeline documented for pinning: SPKI DER -> SHA-256 -> base64
      const dir = mkdtempSync(join(tmpdir(), "fp-"));
      try {
        writeFileSync(join(dir, "c.pem"), server.crt);
        const out = sh(
          `openssl x509 -in ${dir}/c.pem -noout -pubkey | openssl pkey -pubin -outform DER | openssl dgst -sha256 -binary | base64`,
        );
        expect(out.trim()).toBe(fp);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });

  it("decides renewal by remaining validity", () => {
    const { notAfter } = validity(server.crt);
    const now = notAfter.getTime() - 10 * 3_600_000;
    expect(expiresWithin(server.crt, 8 * 3_600_000, now)).toBe(false);
    expect(expiresWithin(server.crt, 11 * 3_600_000, now)).toBe(true);
    expect(expiresWithin(server.crt, 0, notAfter.getTime() + 1)).toBe(true);
  });
});
