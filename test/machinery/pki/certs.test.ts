import { X509Certificate } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import {
  CA_VALIDITY_MS, CLIENT_CERT_VALIDITY_MS, DEFAULT_CERT_VALIDITY_MS, MAINTENANCE_COMMON_NAME, certOrganizations,
  extKeyUsage, issueClientCert, issueEtcdClientCert, issueEtcdPeerCert, issueEtcdServerCert,
  issueKubernetesAdminCert, issueServerCert, newECDSACA, newTalosCA, parsePrivateKeyPem, selfSignedMaintenanceCert,
  validity, verifyChain, type CertAndKey,
} from "../../../src/machinery/pki/index.js";
import { hasOpenssl, openssl, opensslText } from "./helpers.js";

const HOUR = 3_600_000;

function lifetime(pem: string): number {
  const v = validity(pem);
  return v.notAfter.getTime() - v.notBefore.getTime();
}

function expectVerifies(leaf: string, ca: string) {
  expect(verifyChain(leaf, ca)).toBe(true);
  if (hasOpenssl) {
    const r = openssl(["verify", "-CAfile", "{ca.pem}", "{leaf.pem}"], { "ca.pem": ca, "leaf.pem": leaf });
    expect(r.out).toContain(": OK");
  }
}

let talos: CertAndKey;
let otherTalos: CertAndKey;
let etcd: CertAndKey;
let k8s: CertAndKey;
let aggregator: CertAndKey;

beforeAll(async () => {
  [talos, otherTalos, etcd, k8s, aggregator] = await Promise.all([
    newTalosCA(),
    newTalosCA(),
    newECDSACA("etcd"),
    newECDSACA("kubernetes"),
    newECDSACA("aggregator"),
  ]);
});

describe("certificate authorities", () => {
  it("makes the Talos OS CA as upstream: Ed25519, O=talos, CA, certSign+digitalSignature, server+client EKU, 10 years", () => {
    const c = new X509Certificate(talos.crt);
    expect(c.ca).toBe(true);
    expect(c.subject).toBe("O=talos");
    expect(c.publicKey.asymmetricKeyType).toBe("ed25519");
    expect(extKeyUsage(talos.crt)).toEqual(["serverAuth", "clientAuth"]);
    expect(lifetime(talos.crt)).toBe(CA_VALIDITY_MS);
    expect(talos.key).toMatch(/^-----BEGIN ED25519 PRIVATE KEY-----/);
    expect(c.checkPrivateKey(parsePrivateKeyPem(talos.key))).toBe(true);
    expect(verifyChain(talos.crt, talos.crt)).toBe(true);
  });

  it.skipIf(!hasOpenssl)("openssl sees the CA extensions upstream writes", () => {
    const text = opensslText(talos.crt);
    expect(text).toContain("Signature Algorithm: ED25519");
    expect(text).toContain("Subject: O = talos");
    expect(text).toMatch(/X509v3 Basic Constraints: critical\s+CA:TRUE/);
    expect(text).toMatch(/X509v3 Key Usage: critical\s+Digital Signature, Certificate Sign/);
    expect(text).toMatch(/X509v3 Extended Key Usage:\s+TLS Web Server Authentication, TLS Web Client Authentication/);
    expect(text).toContain("X509v3 Subject Key Identifier");
    expect(text).not.toContain("Authority Key Identifier");
  });

  it("makes ECDSA P-256 etcd, Kubernetes and aggregator CAs with upstream subjects", () => {
    for (const [ca, subject] of [
      [etcd, "O=etcd"],
      [k8s, "O=kubernetes"],
      [aggregator, "CN=front-proxy"],
    ] as const) {
      const c = new X509Certificate(ca.crt);
      expect(c.subject).toBe(subject);
      expect(c.ca).toBe(true);
      expect(c.publicKey.asymmetricKeyDetails?.namedCurve).toBe("prime256v1");
      expect(ca.key).toMatch(/^-----BEGIN EC PRIVATE KEY-----/);
      if (hasOpenssl) expect(opensslText(ca.crt)).toContain("Signature Algorithm: ecdsa-with-SHA256");
    }
  });
});

describe("leaf certificates", () => {
  it("issues the apid server certificate: Ed25519, serverAuth only, IP and DNS SANs, 24 h", async () => {
    const cert = await issueServerCert(talos, {
      commonName: "node1.example.org",
      ipSANs: ["10.5.0.2", "127.0.0.1", "::1"],
      dnsSANs: ["node1", "node1.example.org"],
    });
    const c = new X509Certificate(cert.crt);
    expect(c.publicKey.asymmetricKeyType).toBe("ed25519");
    expect(c.ca).toBe(false);
    expect(c.subject).toBe("CN=node1.example.org");
    expect(extKeyUsage(cert.crt)).toEqual(["serverAuth"]);
    expect(c.checkIP("10.5.0.2")).toBe("10.5.0.2");
    expect(c.checkIP("::1")).toBe("::1");
    expect(c.checkIP("10.5.0.3")).toBeUndefined();
    expect(c.checkHost("node1")).toBe("node1");
    expect(lifetime(cert.crt)).toBe(DEFAULT_CERT_VALIDITY_MS);
    expectVerifies(cert.crt, talos.crt);
    if (hasOpenssl) {
      const text = opensslText(cert.crt);
      expect(text).toContain("Signature Algorithm: ED25519");
      expect(text).toMatch(/X509v3 Key Usage: critical\s+Digital Signature\n/);
      expect(text).toContain("IP Address:10.5.0.2");
      expect(text).toContain("DNS:node1.example.org");
      expect(text).toContain("X509v3 Authority Key Identifier");
      expect(text).not.toContain("Basic Constraints");
    }
  });

  it("issues talosconfig client certificates with O = sorted roles and clientAuth only, 1 year", async () => {
    const cert = await issueClientCert(talos, { roles: ["os:reader", " os:etcd:backup ", ""] });
    expect(certOrganizations(cert.crt)).toEqual(["os:etcd:backup", "os:reader"]);
    expect(extKeyUsage(cert.crt)).toEqual(["clientAuth"]);
    expect(lifetime(cert.crt)).toBe(CLIENT_CERT_VALIDITY_MS);
    expect(cert.key).toMatch(/^-----BEGIN ED25519 PRIVATE KEY-----/);
    expectVerifies(cert.crt, talos.crt);
    if (hasOpenssl) expect(opensslText(cert.crt)).toContain("Subject: O = os:etcd:backup + O = os:reader");
  });

  it("keeps a single role as a single O and honours a custom lifetime", async () => {
    const cert = await issueClientCert(talos, { roles: ["os:admin"], validityMs: 2 * HOUR });
    expect(certOrganizations(cert.crt)).toEqual(["os:admin"]);
    expect(lifetime(cert.crt)).toBe(2 * HOUR);
    if (hasOpenssl) expect(opensslText(cert.crt)).toContain("Subject: O = os:admin\n");
  });

  it("a certificate from another CA does not verify", async () => {
    const foreign = await issueClientCert(otherTalos, { roles: ["os:admin"] });
    expect(verifyChain(foreign.crt, talos.crt)).toBe(false);
    if (hasOpenssl) {
      const r = openssl(["verify", "-CAfile", "{ca.pem}", "{leaf.pem}"], { "ca.pem": talos.crt, "leaf.pem": foreign.crt });
      expect(r.ok).toBe(false);
    }
  });

  it("issues etcd peer, server and client certificates from the ECDSA etcd CA", async () => {
    const opts = { hostname: "cp1", addresses: ["10.5.0.2"], dnsNames: ["cp1", "cp1.local"] };
    const [peer, server, client] = await Promise.all([
      issueEtcdPeerCert(etcd, opts),
      issueEtcdServerCert(etcd, opts),
      issueEtcdClientCert(etcd, "talos"),
    ]);
    for (const c of [peer, server, client]) {
      expect(new X509Certificate(c.crt).publicKey.asymmetricKeyType).toBe("ec");
      expect(c.key).toMatch(/^-----BEGIN EC PRIVATE KEY-----/);
      expectVerifies(c.crt, etcd.crt);
    }
    expect(extKeyUsage(peer.crt)).toEqual(["serverAuth", "clientAuth"]);
    expect(new X509Certificate(peer.crt).checkIP("127.0.0.1")).toBeUndefined();
    expect(new X509Certificate(server.crt).checkIP("127.0.0.1")).toBe("127.0.0.1");
    expect(new X509Certificate(server.crt).checkHost("localhost")).toBe("localhost");
    expect(new X509Certificate(server.crt).checkIP("10.5.0.2")).toBe("10.5.0.2");
    expect(extKeyUsage(client.crt)).toEqual(["clientAuth"]);
    expect(new X509Certificate(client.crt).subject).toBe("CN=talos");
  });

  it("issues the Kubernetes admin certificate: O=system:masters, CN=admin, clientAuth", async () => {
    const admin = await issueKubernetesAdminCert(k8s);
    const c = new X509Certificate(admin.crt);
    expect(c.subject).toBe("O=system:masters\nCN=admin");
    expect(extKeyUsage(admin.crt)).toEqual(["clientAuth"]);
    // backdated 10 s for clock skew, as upstream
    expect(validity(admin.crt).notBefore.getTime()).toBeLessThanOrEqual(Date.now() - 9_000);
    expectVerifies(admin.crt, k8s.crt);
  });

  it("makes the maintenance certificate: CA without O, leaf CN maintenance-service.talos.dev, serverAuth, 24 h", async () => {
    const { ca, cert } = await selfSignedMaintenanceCert({ ipSANs: ["10.5.0.9", "127.0.0.1"], dnsSANs: ["talos-abc"] });
    const caCert = new X509Certificate(ca.crt);
    expect(caCert.ca).toBe(true);
    expect(caCert.subject ?? "").toBe("");
    expect(caCert.publicKey.asymmetricKeyType).toBe("ed25519");
    const c = new X509Certificate(cert.crt);
    expect(c.subject).toBe(`CN=${MAINTENANCE_COMMON_NAME}`);
    expect(extKeyUsage(cert.crt)).toEqual(["serverAuth"]);
    expect(lifetime(cert.crt)).toBe(DEFAULT_CERT_VALIDITY_MS);
    expect(c.checkIP("10.5.0.9")).toBe("10.5.0.9");
    expectVerifies(cert.crt, ca.crt);
    // the boot's CA is reused when given, only the leaf is new
    const again = await selfSignedMaintenanceCert({ ca });
    expect(again.ca).toBe(ca);
    expect(verifyChain(again.cert.crt, ca.crt)).toBe(true);
  });
});
