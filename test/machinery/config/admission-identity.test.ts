/**
 * The promise admission makes: any config it accepts can be turned into the node's API identity. For seeded random
 * variants of the OS CA, its key, the certSANs and the hostname (and hand-picked edge cases), every config that
 * passes validateConfig goes through the real path: the MachineConfig resource → secrets.RootOSController →
 * APICertSANsController → APIController (which issues the server certificate with src/machinery/pki) → the mode
 * ApiIdentity serves (src/api/identity.ts), then a real TLS handshake configured like the API listener, by a
 * client holding a certificate from the config's CA and checking the server name as talosctl does, and the server
 * certificate must fit Go's 64 KiB handshake message limit.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyPairSync, X509Certificate } from "node:crypto";
import * as tls from "node:tls";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { ApiIdentity } from "../../../src/api/identity.js";
import { newResource } from "../../../src/machinery/resources/resource.js";
import { readSpec } from "../../../src/machinery/resources/read.js";
import { machineConfigPtr, machineTypePtr } from "../../../src/machinery/resources/types/config.js";
import { HostnameStatusType, NodeAddressType } from "../../../src/machinery/resources/types/network.js";
import { APICertsType, OSRootType } from "../../../src/machinery/resources/types/secrets.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { ControllerRuntime } from "../../../src/state/runtime/index.js";
import { rootOSController } from "../../../src/controllers/secrets/root-os.js";
import { apiCertSANsController } from "../../../src/controllers/secrets/api-cert-sans.js";
import { apiCertsController } from "../../../src/controllers/secrets/api-certs.js";
import type { ListenerMode } from "../../../src/api/transport/listener.js";
import { loadConfig, validateConfig, type MachineConfig } from "../../../src/machinery/config/index.js";
import { generateConfigs, type GeneratedConfigs } from "../../../src/machinery/generate/index.js";
import { issueClientCert } from "../../../src/machinery/pki/issue.js";
import { tlsKeyPem } from "../../../src/machinery/pki/pem.js";
import { goCertificateParts } from "../../../src/machinery/pki/verify.js";
import { KeyUsage } from "../../../src/machinery/pki/certificate.js";
import { editV1, makeCA, makeP384CA, withMachineCA } from "./ca-variants.js";
import { rng, type Rng } from "./fuzz.js";

/** Go's crypto/tls maxHandshake: the Certificate message (leaf DER plus a few bytes of framing) must stay below. */
const GO_MAX_HANDSHAKE = 65_536;

const log = pino({ level: "silent" });
/** The mode the node serves for `cfg`, through the controllers and ApiIdentity, as a node would derive it. */
async function modeFor(cfg: MachineConfig): Promise<ListenerMode> {
  const s = new InMemoryState();
  s.apply(newResource(machineConfigPtr, cfg), "");
  s.apply(newResource(machineTypePtr, cfg.machineType()), "config.MachineTypeController");
  const hostname = cfg.hostname() ?? "host-name";
  s.apply(newResource({ namespace: "network", type: HostnameStatusType.type, id: "hostname" }, { hostname: hostname.split(".")[0], domainname: hostname.split(".").slice(1).join(".") }), "network");
  s.apply(newResource({ namespace: "network", type: NodeAddressType.type, id: "accumulative-no-k8s" }, { addresses: ["10.11.12.13/24", "fd00::7/64"], sortAlgorithm: "v1" }), "network");
  const rt = new ControllerRuntime(s, { backoff: { initialMs: 5, maxMs: 20 } });
  for (const c of [rootOSController(), apiCertSANsController(), apiCertsController()]) rt.register(c);
  rt.start();
  try {
    for (const end = Date.now() + 20_000; ; ) {
      const root = readSpec(s, OSRootType, "os");
      if (readSpec(s, APICertsType, "api") || (root && !root.issuingCA)) break;
      const failed = rt.statuses().find((x) => x.lastError);
      if (failed) throw new Error(`${failed.name}: ${failed.lastError}`);
      if (Date.now() > end) throw new Error("no API certificate was issued");
      await new Promise((r) => setTimeout(r, 5));
    }
    return await new ApiIdentity(s, log).compute();
  } finally {
    await rt.stop();
  }
}

let gen: GeneratedConfigs;
let r: Rng;
beforeAll(async () => {
  gen = await generateConfigs({ clusterName: "demo", endpoint: "https://127.0.0.1:6443", installDisk: "/dev/vda", talosVersion: "v1.13" });
  r = rng();
}, 60_000);

function accepted(text: string): MachineConfig | undefined {
  try {
    const cfg = loadConfig(text);
    validateConfig(cfg, { mode: "local" });
    return cfg;
  } catch {
    return undefined;
  }
}

const fromB64 = (s: string) => Buffer.from(s, "base64").toString("utf8");

/** A handshake as the API listener does it (mTLS, client certificate required) and as talosctl does it (checks the chain and 127.0.0.1). */
async function handshake(mode: Extract<ListenerMode, { kind: "mtls" }>, ca: { crt: string; key: string }): Promise<string | undefined> {
  const client = await issueClientCert(ca, { roles: ["os:admin"] });
  const server = tls.createServer({
    cert: mode.identity.certPem,
    key: mode.identity.keyPem,
    ca: mode.clientCAs,
    requestCert: true,
    rejectUnauthorized: true,
    minVersion: "TLSv1.2",
  });
  const serverSide = new Promise<string | undefined>((resolve) => {
    server.once("secureConnection", (s) => resolve(s.authorized ? undefined : `server: ${String(s.authorizationError)}`));
    server.once("tlsClientError", (err) => resolve(`server: ${err.message}`));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const port = (server.address() as AddressInfo).port;
    const clientSide = await new Promise<string | undefined>((resolve) => {
      const s = tls.connect({ host: "127.0.0.1", port, ca: [ca.crt], cert: client.crt, key: tlsKeyPem(client.key) }, () => {
        s.end();
        resolve(undefined);
      });
      s.once("error", (err) => resolve(`client: ${err.message}`));
    });
    const serverResult = await serverSide;
    return serverResult ?? clientSide;
  } finally {
    server.close();
  }
}

/** Everything that must hold for an accepted config. */
async function mustBuildIdentity(cfg: MachineConfig, what: string): Promise<void> {
  const mode = await modeFor(cfg);
  const key = cfg.machine?.ca?.key;
  expect(mode.kind, what).toBe(key ? "mtls" : "waiting");
  if (mode.kind !== "mtls") return;
  const leaf = new X509Certificate(mode.identity.certPem);
  expect(leaf.raw.byteLength + 64, `${what}: server certificate size`).toBeLessThan(GO_MAX_HANDSHAKE);
  // What Go's parser insists on: DNS SANs in ASCII, IP SANs of 4 or 16 bytes.
  expect(leaf.subjectAltName ?? "", what).not.toMatch(/invalid|[^\x20-\x7e]/);
  const ca = { crt: fromB64(cfg.machine!.ca!.crt!), key: fromB64(key!) };
  const failed = await handshake(mode, ca);
  expect(failed, `${what}: TLS handshake\n${ca.crt}`).toBeUndefined();
  // Go finds a leaf's CA by comparing the leaf's issuer bytes with the CA's subject bytes.
  const leafParts = goCertificateParts(new Uint8Array(leaf.raw));
  const caParts = goCertificateParts(new Uint8Array(new X509Certificate(ca.crt).raw));
  expect("problem" in leafParts ? leafParts.problem : undefined, what).toBeUndefined();
  if ("problem" in leafParts || "problem" in caParts) throw new Error(`${what}: unparsable for Go`);
  expect(Buffer.from(leafParts.issuer).equals(Buffer.from(caParts.subject)), `${what}: leaf issuer equals CA subject`).toBe(true);
}

/** One base64-of-PEM value with one random edit inside its PEM text. */
function mutatePem(b64: string): string {
  const pem = fromB64(b64);
  const lines = pem.split("\n");
  const i = 1 + r.int(Math.max(1, lines.length - 3));
  const line = lines[i] ?? "";
  const p = r.int(Math.max(1, line.length));
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";
  switch (r.int(4)) {
    case 0:
      lines[i] = line.slice(0, p) + alphabet[r.int(alphabet.length)] + line.slice(p + 1);
      break;
    case 1:
      lines[i] = line.slice(0, p) + line.slice(p + 1);
      break;
    case 2:
      lines.splice(i, 1);
      break;
    default:
      lines[i] = line.slice(0, p);
  }
  return Buffer.from(lines.join("\n")).toString("base64");
}

const OCTET = () => String(r.chance(0.8) ? r.int(256) : r.int(1000));
function randomSAN(): string {
  switch (r.int(5)) {
    case 0:
      return [OCTET(), OCTET(), OCTET(), OCTET()].join(".");
    case 1:
      return Array.from({ length: 1 + r.int(9) }, () => (r.chance(0.2) ? "" : r.int(0x10000).toString(16))).join(":") + (r.chance(0.1) ? "%eth0" : "");
    case 2:
      return `fd00::${r.int(0x10000).toString(16)}${r.chance(0.2) ? "/64" : ""}`;
    case 3:
      return Array.from({ length: 1 + r.int(4) }, () => Array.from({ length: 1 + r.int(12) }, () => r.pick([..."abcxyz019-_", "é", " ", "*", "."])).join("")).join(".");
    default:
      return r.pick(["localhost", "*.example.com", "api.example.com.", "", "::1", "127.0.0.1", "0.0.0.0"]);
  }
}

describe("every config admission accepts yields a working API identity", () => {
  let total = 0;
  let passed = 0;
  afterAll(() => {
    console.log(`admission→identity: ${passed} of ${total} variants accepted and served (seed ${r.seed})`);
  });

  const check = async (text: string, what: string) => {
    total++;
    const cfg = accepted(text);
    if (!cfg) return false;
    passed++;
    await mustBuildIdentity(cfg, `${what} (seed ${r.seed})`);
    return true;
  };

  it("hand-picked CAs, keys and names", async () => {
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
    const good = [gen.controlplane, gen.worker, withMachineCA(gen.controlplane, await makeCA({ key: ec }))];
    for (const [i, text] of good.entries()) expect(await check(text, `good ${i}`), `good ${i}`).toBe(true);
    const bad = [
      withMachineCA(gen.controlplane, await makeP384CA()),
      withMachineCA(gen.controlplane, { ...(await makeCA()), key: (await makeCA()).key }),
      withMachineCA(gen.controlplane, await makeCA({ keyUsage: KeyUsage.digitalSignature })),
      editV1(gen.controlplane, (v) => void (v.machine.certSANs = ["999.999.999.999"])),
      editV1(gen.controlplane, (v) => void (v.machine.certSANs = ["::::"])),
      gen.controlplane.replace("certSANs: []", `certSANs: [${Array.from({ length: 20_000 }, (_, i) => `n${i}.example`).join(",")}]`),
      editV1(gen.controlplane, (v) => void (v.machine.network = { hostname: "héllo" })),
    ];
    for (const [i, text] of bad.entries()) expect(await check(text, `bad ${i}`), `bad ${i}`).toBe(false);
    // The largest SAN set admission allows still fits the handshake.
    const biggest = editV1(gen.controlplane, (v) => {
      v.machine.certSANs = Array.from({ length: 128 }, (_, i) => `${"a".repeat(60)}.${"b".repeat(60)}.x${String(i).padStart(3, "0")}`);
      v.machine.network = { hostname: `${"h".repeat(63)}.${"d".repeat(63)}.${"e".repeat(63)}.${"f".repeat(61)}` };
    });
    expect(await check(biggest, "largest SANs")).toBe(true);
  }, 60_000);

  it("seeded random mutations of the OS CA, its key, the SANs and the hostname", async () => {
    const base = loadConfig(gen.controlplane).machine!.ca!;
    let servedMutatedCA = 0;
    const rounds = Number(process.env.FUZZ_ROUNDS ?? 150);
    for (let i = 0; i < rounds; i++) {
      const kind = r.int(4);
      const text = editV1(gen.controlplane, (v) => {
        const ca = { crt: base.crt!, key: base.key! };
        if (kind === 0) ca.crt = mutatePem(ca.crt);
        if (kind === 1) ca.key = mutatePem(ca.key);
        v.machine.ca = ca;
        if (kind === 2) v.machine.certSANs = Array.from({ length: r.chance(0.05) ? 600 : r.int(6) }, randomSAN);
        if (kind === 3) v.machine.network = { hostname: randomSAN() };
      });
      const ok = await check(text, `variant ${i} (kind ${kind})`);
      if (ok && kind < 2 && text !== gen.controlplane) servedMutatedCA++;
    }
    // Some edits keep a CA usable (serial, signature or padding bytes), and some must be refused; both happen.
    expect(passed, `seed ${r.seed}`).toBeGreaterThan(10);
    expect(passed, `seed ${r.seed}`).toBeLessThan(total);
    console.log(`mutated CA/key variants accepted and served: ${servedMutatedCA}`);
  }, Number(process.env.FUZZ_ROUNDS ?? 150) * 800);
});
