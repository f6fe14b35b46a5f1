/**
 * trustd with real certificates over real gRPC/TLS: the token check (missing / wrong / right, and the refusal logged
 * with the peer), CSR handling (not PEM, not a CSR, a forged signature), the policy of what gets signed (EKU
 * serverAuth only, digitalSignature, Organization stripped, 24 h, the CSR's names), streaming methods refused, the
 * server verified against the OS CA by the client, and the certificate rotated in place on renewal.
 */
import { X509Certificate, createPrivateKey } from "node:crypto";
import * as tls from "node:tls";
import { Writable } from "node:stream";
import * as grpc from "@grpc/grpc-js";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newTalosCA } from "../../src/machinery/pki/ca.js";
import { newCSR } from "../../src/machinery/pki/csr.js";
import { ExtKeyUsage, KeyUsage } from "../../src/machinery/pki/certificate.js";
import { issueLeaf } from "../../src/machinery/pki/issue.js";
import { encodePem, tlsKeyPem } from "../../src/machinery/pki/pem.js";
import { x509 } from "../../src/machinery/pki/provider.js";
import type { CertAndKey } from "../../src/machinery/pki/ca.js";
import { newResource } from "../../src/machinery/resources/resource.js";
import { OSRootType, SECRETS_NS, TrustdCertsType, type OSRootSpec } from "../../src/machinery/resources/types/secrets.js";
import { Code } from "../../src/machinery/errors.js";
import { InMemoryState } from "../../src/state/inmem.js";
import { checkToken, signServerCSR } from "../../src/api/trustd/certificate.js";
import { TrustdGrpcServer } from "../../src/api/trustd/server.js";
import { requestTrustdCertificate } from "../../src/host/trustd-client.js";

const TOKEN = "abcdef.0123456789abcdef";
const HOUR = 3_600_000;

let ca: CertAndKey;
let otherCA: CertAndKey;
let root: OSRootSpec;

beforeAll(async () => {
  [ca, otherCA] = await Promise.all([newTalosCA(), newTalosCA()]);
  root = { issuingCA: ca, acceptedCAs: [{ crt: ca.crt }], certSANIPs: [], certSANDNSNames: [], token: TOKEN };
});

const bytes = (s: string) => new TextEncoder().encode(s);

async function rejects(p: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await p;
  } catch (e) {
    return e as { code: number; message: string };
  }
  throw new Error("expected a rejection");
}

describe("the token check", () => {
  it("refuses a missing or wrong token with upstream's texts and admits the right one", () => {
    expect(() => checkToken([], TOKEN)).toThrow(expect.objectContaining({ code: Code.Unauthenticated, message: "missing token" }));
    expect(() => checkToken(["abcdef.0123456789abcdeX"], TOKEN)).toThrow(expect.objectContaining({ code: Code.Unauthenticated, message: "invalid token" }));
    expect(() => checkToken([TOKEN.slice(0, 5)], TOKEN)).toThrow(expect.objectContaining({ message: "invalid token" }));
    expect(() => checkToken([TOKEN, "other"], TOKEN)).not.toThrow();
    // An empty machine.token admits nobody, not even an empty token.
    expect(() => checkToken([""], "")).toThrow(expect.objectContaining({ message: "invalid token" }));
  });
});

describe("signing a CSR", () => {
  it("signs a server-only certificate: EKU serverAuth only, digitalSignature, no Organization, 24 h, the CSR's names", async () => {
    const { csr, key } = await newCSR({
      algorithm: "ed25519",
      commonName: "w1.example.org",
      organizations: ["os:admin", "os:impersonator"],
      ipSANs: ["10.5.0.3", "127.0.0.1"],
      dnsSANs: ["w1", "w1.example.org"],
    });
    const before = Date.now();
    const signed = await signServerCSR(root, bytes(csr));
    const cert = new X509Certificate(signed.crt);
    expect(cert.subject).toBe("CN=w1.example.org");
    expect(signed.strippedOrganizations).toEqual(["os:admin", "os:impersonator"]);
    expect(cert.keyUsage).toEqual([ExtKeyUsage.ServerAuth]);
    expect(cert.subjectAltName).toBe("DNS:w1, DNS:w1.example.org, IP Address:10.5.0.3, IP Address:127.0.0.1");
    expect(cert.ca).toBe(false);
    expect(cert.verify(new X509Certificate(ca.crt).publicKey)).toBe(true);
    expect(cert.checkPrivateKey(createPrivateKey(tlsKeyPem(key)))).toBe(true);
    const validMs = Date.parse(cert.validTo) - Date.parse(cert.validFrom);
    expect(validMs).toBeGreaterThan(24 * HOUR - 2000);
    expect(validMs).toBeLessThanOrEqual(24 * HOUR + 1000);
    expect(Date.parse(cert.validFrom)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 - 1000);
    // KeyUsage: digitalSignature alone, as upstream forces.
    expect(keyUsageBits(signed.crt)).toBe(KeyUsage.digitalSignature);
    expect(signed.ca).toBe(ca.crt);
  });

  it("returns every accepted CA, concatenated", async () => {
    const { csr } = await newCSR({ algorithm: "ed25519", commonName: "w1" });
    const signed = await signServerCSR({ ...root, acceptedCAs: [{ crt: otherCA.crt }, { crt: ca.crt }] }, bytes(csr));
    expect(signed.ca).toBe(otherCA.crt + ca.crt);
  });

  it("ECDSA requests are signed too (the key type is the caller's)", async () => {
    const { csr } = await newCSR({ algorithm: "ecdsa", commonName: "w2", ipSANs: ["10.5.0.4"] });
    const cert = new X509Certificate((await signServerCSR(root, bytes(csr))).crt);
    expect(cert.publicKey.asymmetricKeyType).toBe("ec");
    expect(cert.verify(new X509Certificate(ca.crt).publicKey)).toBe(true);
  });

  it("refuses what is not a PEM CSR with InvalidArgument, and a forged request with Internal", async () => {
    expect(await rejects(signServerCSR(root, bytes("not a pem")))).toMatchObject({ code: Code.InvalidArgument, message: "failed to decode CSR" });
    const notCSR = await rejects(signServerCSR(root, bytes(encodePem("CERTIFICATE REQUEST", new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x01])))));
    expect(notCSR.code).toBe(Code.InvalidArgument);
    expect(notCSR.message).toMatch(/^failed to parse CSR: ./);
    // A real CSR whose signature does not match its key (the last byte of the signature flipped).
    const { csr } = await newCSR({ algorithm: "ed25519", commonName: "w1" });
    const der = Buffer.from(csr.replace(/-----[^-]+-----/g, "").replace(/\s+/g, ""), "base64");
    der[der.length - 1] ^= 0xff;
    const forged = await rejects(signServerCSR(root, bytes(encodePem("CERTIFICATE REQUEST", der))));
    expect(forged).toMatchObject({ code: Code.Internal });
    expect(forged.message).toMatch(/^failed to sign CSR: failed verifying CSR signature/);
  });

  it("refuses when this node has no OS CA key", async () => {
    const { csr } = await newCSR({ algorithm: "ed25519", commonName: "w1" });
    expect(await rejects(signServerCSR({ ...root, issuingCA: undefined }, bytes(csr)))).toMatchObject({ code: Code.Unavailable });
  });
});

/** The KeyUsage flags of a certificate (node:crypto does not expose them; @peculiar/x509 reads them). */
function keyUsageBits(pem: string): number {
  return new x509.X509Certificate(pem).getExtension(x509.KeyUsagesExtension)!.usages;
}

describe("the trustd server over gRPC and TLS", () => {
  const state = new InMemoryState();
  const lines: string[] = [];
  const logged: string[] = [];
  const log = pino({ level: "info" }, new Writable({ write: (c, _e, cb) => (logged.push(String(c)), cb()) }));
  let server: TrustdGrpcServer;
  let endpoint: string;

  const serverCert = () =>
    issueLeaf(ca, { subject: { commonName: "cp1" }, keyUsage: KeyUsage.digitalSignature | KeyUsage.keyEncipherment, extKeyUsage: [ExtKeyUsage.ServerAuth], ipSANs: ["127.0.0.1"], dnsSANs: ["cp1"], validityMs: 24 * HOUR });

  beforeAll(async () => {
    state.apply(newResource({ namespace: SECRETS_NS, type: OSRootType.type, id: "os" }, root), "secrets.RootOSController");
    server = new TrustdGrpcServer({ state, log, host: "127.0.0.1", port: 0 });
    const ready = server.ready(AbortSignal.timeout(5000));
    state.apply(newResource({ namespace: SECRETS_NS, type: TrustdCertsType.type, id: "trustd" }, { server: await serverCert(), acceptedCAs: [{ crt: ca.crt }] }), "secrets.TrustdController");
    await ready;
    const ep = await server.listen((l) => lines.push(l));
    endpoint = `127.0.0.1:${ep.port}`;
  });
  afterAll(async () => {
    await server?.close();
  });

  const ask = async (token: string, csrText?: string, cas = [ca.crt]) =>
    requestTrustdCertificate({ endpoint, token, acceptedCAs: cas, csr: csrText ?? (await newCSR({ algorithm: "ed25519", commonName: "w1", ipSANs: ["10.5.0.3"] })).csr, timeoutMs: 5000 });

  it("signs for the right token and logs the request with the peer", async () => {
    const answer = await ask(TOKEN);
    const cert = new X509Certificate(answer.crt);
    expect(cert.subject).toBe("CN=w1");
    expect(cert.verify(new X509Certificate(ca.crt).publicKey)).toBe(true);
    expect(answer.ca).toBe(ca.crt);
    expect(lines.some((l) => /^trustd: received CSR signing request from 127\.0\.0\.1:\d+: subject CN=w1 dns names \[\] addresses \[10\.5\.0\.3\]$/.test(l))).toBe(true);
  });

  it("refuses a wrong token, and logs the refusal naming the peer", async () => {
    expect(await rejects(ask("abcdef.wrongwrongwrongx"))).toMatchObject({ code: Code.Unauthenticated, message: "invalid token" });
    expect(lines.some((l) => /^trustd: refused a certificate request from 127\.0\.0\.1:\d+: invalid token$/.test(l))).toBe(true);
    expect(logged.some((l) => /"peer":"127\.0\.0\.1:\d+".*"reason":"invalid token".*trustd refused a certificate request/.test(l))).toBe(true);
  });

  it("refuses a call without a token", async () => {
    const client = new grpc.Client(endpoint, grpc.credentials.createSsl(Buffer.from(ca.crt)));
    try {
      const err = await new Promise<grpc.ServiceError>((resolve) =>
        client.makeUnaryRequest("/securityapi.SecurityService/Certificate", (b: Buffer) => b, (b: Buffer) => b, Buffer.alloc(0), new grpc.Metadata(), (e) => resolve(e!)),
      );
      expect(err).toMatchObject({ code: grpc.status.UNAUTHENTICATED, details: "missing token" });
    } finally {
      client.close();
    }
  });

  it("answers InvalidArgument for a bad CSR (after the token check)", async () => {
    expect(await rejects(ask(TOKEN, "garbage"))).toMatchObject({ code: Code.InvalidArgument, message: "failed to decode CSR" });
    expect(await rejects(ask("nope", "garbage"))).toMatchObject({ code: Code.Unauthenticated });
  });

  it("serves no streaming (or any other) method", async () => {
    const client = new grpc.Client(endpoint, grpc.credentials.createSsl(Buffer.from(ca.crt)));
    try {
      const md = new grpc.Metadata();
      md.set("token", TOKEN);
      const code = await new Promise<number>((resolve) => {
        const call = client.makeServerStreamRequest("/securityapi.SecurityService/Watch", (b: Buffer) => b, (b: Buffer) => b, Buffer.alloc(0), md);
        call.on("error", (e: grpc.ServiceError) => resolve(e.code));
        call.on("data", () => {});
      });
      expect(code).toBe(grpc.status.UNIMPLEMENTED);
    } finally {
      client.close();
    }
  });

  it("is verified against the OS CA by the client: another CA's client cannot talk to it", async () => {
    const err = await rejects(ask(TOKEN, undefined, [otherCA.crt]));
    expect(err.code).toBe(Code.Unavailable);
  });

  it("asks for no client certificate, and rotates its certificate in place on renewal", async () => {
    const peerSerial = () =>
      new Promise<string>((resolve, reject) => {
        const s = tls.connect({ host: "127.0.0.1", port: Number(endpoint.split(":")[1]), ca: ca.crt, ALPNProtocols: ["h2"], servername: "cp1" }, () => {
          const serial = s.getPeerX509Certificate()!.serialNumber;
          s.destroy();
          resolve(serial);
        });
        s.on("error", reject);
      });
    const first = await peerSerial();
    const renewed = await serverCert();
    state.apply(newResource({ namespace: SECRETS_NS, type: TrustdCertsType.type, id: "trustd" }, { server: renewed, acceptedCAs: [{ crt: ca.crt }] }), "secrets.TrustdController");
    const second = await peerSerial();
    expect(second).not.toBe(first);
    expect(second).toBe(new X509Certificate(renewed.crt).serialNumber);
    // Still signing after the swap.
    expect((await ask(TOKEN)).crt).toContain("BEGIN CERTIFICATE");
  });
});
