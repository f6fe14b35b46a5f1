/**
 * TLS refusals as upstream: a client certificate from an unknown CA, an expired one, one whose EKU is not
 * exactly clientAuth, or none at all is refused inside the TLS exchange with the alert a client reads
 * (talosctl prints "remote error: tls: unknown certificate authority" and so on). Plus the host listener's
 * socket rules: the peer named in reports is the real one, and sockets whose connection died unnoticed are
 * released (the Node 20 http2 leak).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as http2 from "node:http2";
import * as net from "node:net";
import * as tls from "node:tls";
import { status } from "@grpc/grpc-js";
import { issueClientCert, issueLeaf, issueServerCert } from "../../src/machinery/pki/issue.js";
import { newTalosCA } from "../../src/machinery/pki/ca.js";
import { tlsKeyPem } from "../../src/machinery/pki/pem.js";
import { DEFAULT_LISTENER_LIMITS, TlsListener, type Refusal } from "../../src/host/tls-listener.js";
import { applyControlPlane, clusterConfigs, eventually, mtlsClient, startNode, talosconfigCreds, version, type Creds, type Harness } from "./harness.js";
import { Flag, FrameType, PREFACE, VERSION_PATH, captureClientHello, closedWithin, frame, grpcRequestHeaders, pool, settings, sleep, tlsConnect } from "./wire.js";

const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";
const SERVER_AUTH = "1.3.6.1.5.5.7.3.1";

let h: Harness;
let ca: string;
const certs: Record<string, Creds> = {};

beforeAll(async () => {
  h = await startNode();
  const cfgs = await applyControlPlane(h);
  const admin = talosconfigCreds(cfgs.talosconfig);
  ca = admin.ca;
  await eventually(async () => {
    const a = mtlsClient(h, admin);
    try {
      await version(a);
    } finally {
      a.close();
    }
  });
  const os = { crt: cfgs.secrets.certs.os.crt, key: cfgs.secrets.certs.os.key };
  const leaf = async (extKeyUsage: string[], validityMs = 3_600_000, notBefore?: Date) => {
    const x = await issueLeaf(os, { subject: { organizations: ["os:admin"], commonName: "test" }, extKeyUsage, validityMs, notBefore });
    return { ca, crt: x.crt, key: tlsKeyPem(x.key) };
  };
  const foreign = await issueClientCert(await newTalosCA(), { roles: ["os:admin"] });
  certs.admin = admin;
  certs.foreign = { ca, crt: foreign.crt, key: tlsKeyPem(foreign.key) };
  certs.expired = await leaf([CLIENT_AUTH], -3_600_000, new Date(Date.now() - 7_200_000));
  certs.serverAuth = await leaf([SERVER_AUTH]);
  certs.serverAndClientAuth = await leaf([SERVER_AUTH, CLIENT_AUTH]);
  certs.noEku = await leaf([]);
}, 60_000);
afterAll(async () => {
  await h?.stop();
});

/** Connect like a client that completes TLS 1.3, sends the HTTP/2 preface, and reports what the server said. */
function tryTls(c: Creds | undefined): Promise<{ secure: boolean; error?: string; served?: boolean }> {
  return new Promise((resolve) => {
    let secure = false;
    const s = tls.connect({
      host: "127.0.0.1",
      port: h.node.port,
      ca: c?.ca ?? ca,
      cert: c?.crt,
      key: c?.key,
      ALPNProtocols: ["h2"],
      checkServerIdentity: () => undefined,
    });
    s.on("secureConnect", () => {
      secure = true;
      s.write(PREFACE);
    });
    // The server's HTTP/2 preface: the connection is being served.
    s.on("data", () => {
      resolve({ secure, served: true });
      s.destroy();
    });
    s.on("error", (err: NodeJS.ErrnoException) => resolve({ secure, error: err.code ?? err.message }));
    s.on("close", () => resolve({ secure }));
  });
}

describe("client certificates are refused in the TLS exchange with the alert the client reads", () => {
  it.each([
    ["from another CA", "foreign", "ERR_SSL_TLSV1_ALERT_UNKNOWN_CA"],
    ["expired", "expired", "ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED"],
    ["with EKU serverAuth only", "serverAuth", "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE"],
    ["with EKU serverAuth and clientAuth", "serverAndClientAuth", "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE"],
    ["without any EKU", "noEku", "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE"],
  ])("%s", async (_what, name, alert) => {
    expect(await tryTls(certs[name])).toEqual({ secure: true, error: alert });
  });

  it("no certificate at all", async () => {
    expect(await tryTls(undefined)).toEqual({ secure: true, error: "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED" });
  });

  it("the admin certificate still works, and a gRPC client is told why it was refused", async () => {
    expect(await tryTls(certs.admin)).toEqual({ secure: true, served: true });
    const c = mtlsClient(h, certs.foreign);
    await expect(version(c)).rejects.toMatchObject({ code: status.UNAVAILABLE, details: expect.stringMatching(/unknown ca/) });
    c.close();
  });

  const tls12 = () =>
    new Promise<string>((resolve) => {
      const s = tls.connect({ host: "127.0.0.1", port: h.node.port, maxVersion: "TLSv1.2", rejectUnauthorized: false, ALPNProtocols: ["h2"] });
      s.on("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      s.on("secureConnect", () => resolve("connected"));
    });

  it("TLS 1.2 is refused, as upstream (TLS 1.3 only)", async () => {
    expect(await tls12()).toBe("ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION");
  });

  it("a renewed server certificate keeps all of it (TLS 1.3 only, client certificates refused with alerts)", async () => {
    const cfgs = await clusterConfigs();
    const renewed = await issueServerCert({ crt: cfgs.secrets.certs.os.crt, key: cfgs.secrets.certs.os.key }, { ipSANs: ["127.0.0.1"] });
    h.node.api.rotate({ certPem: renewed.crt, keyPem: tlsKeyPem(renewed.key) });
    expect(await tls12()).toBe("ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION");
    expect(await tryTls(certs.foreign)).toEqual({ secure: true, error: "ERR_SSL_TLSV1_ALERT_UNKNOWN_CA" });
    expect(await tryTls(certs.admin)).toEqual({ secure: true, served: true });
  });
});

describe("the host TLS listener", () => {
  let identity: { certPem: string; keyPem: string };
  beforeAll(async () => {
    const x = await issueServerCert(await newTalosCA(), { ipSANs: ["127.0.0.1"] });
    identity = { certPem: x.crt, keyPem: tlsKeyPem(x.key) };
  });

  it("names the real peer, once, for a connection reset during the handshake", async () => {
    const refusals: Refusal[] = [];
    const l = new TlsListener(identity, "t", { ...DEFAULT_LISTENER_LIMITS, onAccept: (c) => c.socket.destroy(), onRefused: (r) => refusals.push(r) });
    const { port } = await l.listen("127.0.0.1", 0);
    const ports = new Set<number>();
    const hello = await captureClientHello();
    await pool(20, 5, async () => {
      const raw = net.connect({ port, host: "127.0.0.1" });
      raw.on("error", () => {});
      await new Promise((r) => raw.once("connect", r));
      ports.add(raw.localPort!);
      // A ClientHello, then a reset once the server has answered it: the server is mid-handshake.
      raw.write(hello);
      await new Promise((r) => raw.once("data", r));
      raw.resetAndDestroy();
      await closedWithin(raw, 2000);
    });
    await eventually(async () => expect(l.size).toBe(0));
    await l.close();
    expect(refusals.length).toBe(20);
    for (const r of refusals) {
      expect(r.peer).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(ports.has(Number(r.peer.split(":")[1]))).toBe(true);
    }
    expect(new Set(refusals.map((r) => r.peer)).size).toBe(refusals.length);
  });

  it("releases sockets node:http2 keeps after a reset (a stream closed while its connection is reset)", async () => {
    // The trigger, on a bare node:http2 server: answer, then RST_STREAM(NO_ERROR), while the client resets.
    const h2 = http2.createServer();
    h2.on("stream", (s) => {
      s.on("error", () => {});
      s.respond({ ":status": 200 }, { endStream: true });
      s.close(http2.constants.NGHTTP2_NO_ERROR);
    });
    const run = async (sweepIntervalMs: number) => {
      const l = new TlsListener(identity, "t", { ...DEFAULT_LISTENER_LIMITS, sweepIntervalMs, onAccept: (c) => h2.emit("connection", c.socket) });
      const { port } = await l.listen("127.0.0.1", 0);
      await pool(200, 20, async (i) => {
        const c = await tlsConnect(port);
        if (!c) return;
        c.tls.on("data", () => {});
        c.tls.write(Buffer.concat([PREFACE, settings(), frame(FrameType.HEADERS, Flag.END_HEADERS, 1, grpcRequestHeaders(VERSION_PATH))]));
        await sleep(i % 3);
        c.raw.resetAndDestroy();
        await closedWithin(c.raw, 2000);
      });
      await sleep(1500);
      const left = l.size;
      await l.close();
      return left;
    };
    // Without the sweep (an interval longer than the test) the leak shows; with it nothing is left.
    expect(await run(3_600_000)).toBeGreaterThan(0);
    expect(await run(200)).toBe(0);
  }, 60_000);
});
