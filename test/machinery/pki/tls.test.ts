/**
 * Real TLS on loopback with the certificates the PKI issues, configured the way apid is: server certificate from the
 * OS CA, client certificate required and verified against the same CA, ALPN h2.
 */
import { connect, createServer, type DetailedPeerCertificate, type Server, type TLSSocket } from "node:tls";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  issueClientCert, issueServerCert, isExactlyClientAuth, newTalosCA, peerOrganizations, spkiFingerprint,
  tlsCredentials, type CertAndKey,
} from "../../../src/machinery/pki/index.js";

interface Seen {
  authorized: boolean;
  orgs: string[];
  exactClientAuth: boolean;
  alpn: string | false | null;
}

let ca: CertAndKey;
let server: Server;
let port: number;
const seen: Seen[] = [];

beforeAll(async () => {
  ca = await newTalosCA();
  const cert = await issueServerCert(ca, { commonName: "node", ipSANs: ["127.0.0.1", "::1"], dnsSANs: ["localhost"] });
  server = createServer(
    { ...tlsCredentials(cert), ca: [ca.crt], requestCert: true, rejectUnauthorized: true, ALPNProtocols: ["h2"] },
    (sock: TLSSocket) => {
      const peer = sock.getPeerCertificate(true) as DetailedPeerCertificate;
      seen.push({
        authorized: sock.authorized,
        orgs: peerOrganizations(peer),
        exactClientAuth: isExactlyClientAuth(peer),
        alpn: sock.alpnProtocol,
      });
      sock.end("ok");
    },
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

interface DialResult {
  data: string;
  alpn: string | false | null;
  fp?: string;
  error?: Error;
}

/**
 * Connects and reads until close. With TLS 1.3 the server judges the client certificate after the client considers
 * the handshake done, so a rejected client sees an alert error or a close without data, never "ok".
 */
function dial(client: CertAndKey | undefined, trust: string): Promise<DialResult> {
  return new Promise((resolve) => {
    const sock = connect({
      host: "127.0.0.1",
      port,
      ca: [trust],
      ...(client ? tlsCredentials(client) : {}),
      ALPNProtocols: ["h2"],
    });
    let data = "";
    let fp: string | undefined;
    sock.on("secureConnect", () => (fp = spkiFingerprint(sock.getPeerX509Certificate()!)));
    sock.on("data", (d) => (data += d.toString()));
    sock.on("close", () => resolve({ data, alpn: sock.alpnProtocol ?? false, fp }));
    sock.on("error", (error) => resolve({ data, alpn: false, error }));
  });
}

describe("mutual TLS with issued certificates", () => {
  it("accepts a client certificate from the OS CA, negotiates h2 and exposes the roles", async () => {
    const client = await issueClientCert(ca, { roles: ["os:reader", "os:etcd:backup"] });
    const r = await dial(client, ca.crt);
    expect(r.error).toBeUndefined();
    expect(r.data).toBe("ok");
    expect(r.alpn).toBe("h2");
    const last = seen.at(-1)!;
    expect(last).toEqual({ authorized: true, orgs: ["os:etcd:backup", "os:reader"], exactClientAuth: true, alpn: "h2" });
  });

  it("lets the client pin the server leaf by SPKI fingerprint", async () => {
    const client = await issueClientCert(ca, { roles: ["os:admin"] });
    const r = await dial(client, ca.crt);
    expect(r.fp).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(seen.at(-1)?.orgs).toEqual(["os:admin"]);
  });

  it("rejects a client certificate from another CA", async () => {
    const before = seen.length;
    const otherCA = await newTalosCA();
    const foreign = await issueClientCert(otherCA, { roles: ["os:admin"] });
    const r = await dial(foreign, ca.crt);
    expect(r.data).toBe("");
    expect(seen.length).toBe(before);
  });

  it("rejects a client without a certificate", async () => {
    const before = seen.length;
    const r = await dial(undefined, ca.crt);
    expect(r.data).toBe("");
    expect(r.error?.message).toMatch(/certificate required/);
    expect(seen.length).toBe(before);
  });

  it("the client refuses a server it cannot verify against its pinned CA", async () => {
    const otherCA = await newTalosCA();
    const client = await issueClientCert(ca, { roles: ["os:admin"] });
    const r = await dial(client, otherCA.crt);
    expect(r.error?.message).toMatch(/self[- ]signed|unable to verify/i);
  });

  it("a serverAuth-only certificate used as a client certificate is refused", async () => {
    const before = seen.length;
    const asClient = await issueServerCert(ca, { commonName: "impostor" });
    // OpenSSL's purpose check refuses it before apid's clientAuth-only rule would
    const r = await dial(asClient, ca.crt);
    expect(r.data).toBe("");
    expect(seen.length).toBe(before);
  });
});
