/**
 * trustd end to end between two in-memory nodes with real certificates and real gRPC/TLS on loopback: a control
 * plane's TrustdController issues trustd's certificate, its trustd server signs, and a worker's APIController asks
 * it (round robin over the control-plane Endpoints, backoff, refresh) and publishes what it gets; a wrong
 * machine.token leaves the worker waiting with a reason that names the address and the refusal.
 */
import { X509Certificate } from "node:crypto";
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { generateConfigs } from "../../../src/machinery/generate/index.js";
import { loadConfig, parsePatch, patchConfig } from "../../../src/machinery/config/index.js";
import { ExtKeyUsage } from "../../../src/machinery/pki/certificate.js";
import { newResource } from "../../../src/machinery/resources/resource.js";
import { read, readSpec } from "../../../src/machinery/resources/read.js";
import { CONFIG_NS, MachineConfigType, MachineTypeType } from "../../../src/machinery/resources/types/config.js";
import { CONTROLPLANE_NS, EndpointType } from "../../../src/machinery/resources/types/k8s-status.js";
import { HostnameStatusType, NodeAddressType } from "../../../src/machinery/resources/types/network.js";
import { APICertsType, TrustdCertsType } from "../../../src/machinery/resources/types/secrets.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { rootOSController } from "../../../src/controllers/secrets/root-os.js";
import { apiCertSANsController } from "../../../src/controllers/secrets/api-cert-sans.js";
import { apiCertsController, type WorkerCertStatus } from "../../../src/controllers/secrets/api-certs.js";
import { trustdCertsController } from "../../../src/controllers/secrets/trustd-certs.js";
import { TrustdGrpcServer } from "../../../src/api/trustd/server.js";
import { workerWaitingReason, WORKER_WAITING_REASON } from "../../../src/api/identity.js";
import { eventually, put, settle, startRuntime } from "../runtime/harness.js";

const gen = generateConfigs({ clusterName: "demo", endpoint: "https://10.5.0.2:6443", talosVersion: "v1.13" });

async function configText(kind: "controlplane" | "worker", patch = ""): Promise<string> {
  const cfgs = await gen;
  const base = kind === "controlplane" ? cfgs.controlplane : cfgs.worker;
  return patch ? new TextDecoder().decode(patchConfig(loadConfig(base), [parsePatch(patch)]).encode()) : base;
}

function publish(s: InMemoryState, text: string): void {
  const cfg = loadConfig(text);
  s.apply(newResource({ namespace: CONFIG_NS, type: MachineConfigType.type, id: "v1alpha1" }, cfg), "");
  s.apply(newResource({ namespace: CONFIG_NS, type: MachineTypeType.type, id: "machine-type" }, cfg.machineType()), "config.MachineTypeController");
}

function network(s: InMemoryState, hostname: string, addrs: string[]): void {
  put(s, "network", HostnameStatusType.type, "hostname", { hostname, domainname: "example.org" }, "network.HostnameSpecController");
  for (const id of ["accumulative-no-k8s", "routed-no-k8s", "current-no-k8s"]) {
    put(s, "network", NodeAddressType.type, id, { addresses: addrs, sortAlgorithm: "v1" }, "network.NodeAddressController");
  }
}

const endpoints = (s: InMemoryState, addresses: string[]) =>
  put(s, CONTROLPLANE_NS, EndpointType.type, "controlplane", { addresses, hosts: [] }, "k8s.StaticEndpointController");

const servers: TrustdGrpcServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

interface ControlPlane {
  state: InMemoryState;
  server: TrustdGrpcServer;
  lines: string[];
  port: number;
}

/** A control plane at `host` (a loopback address) with trustd listening there. */
async function controlPlane(host = "127.0.0.1", port = 0): Promise<ControlPlane> {
  const state = new InMemoryState();
  startRuntime(state, [rootOSController(), apiCertSANsController(), trustdCertsController()]);
  publish(state, await configText("controlplane"));
  network(state, "cp1", [`${host}/8`]);
  const server = new TrustdGrpcServer({ state, log: pino({ level: "silent" }), host, port });
  servers.push(server);
  await server.ready(AbortSignal.timeout(10_000));
  const lines: string[] = [];
  const ep = await server.listen((l) => lines.push(l));
  return { state, server, lines, port: ep.port };
}

interface Worker {
  state: InMemoryState;
  statuses: (WorkerCertStatus | undefined)[];
}

async function worker(port: number, opts: { patch?: string; refreshMs?: number } = {}): Promise<Worker> {
  const state = new InMemoryState();
  const statuses: (WorkerCertStatus | undefined)[] = [];
  startRuntime(state, [
    rootOSController(),
    apiCertSANsController(),
    apiCertsController({ worker: { port, retry: { initialMs: 20, maxMs: 200 }, refreshMs: opts.refreshMs }, onWorkerStatus: (s) => statuses.push(s) }),
  ]);
  publish(state, await configText("worker", opts.patch));
  network(state, "w1", ["10.5.0.3/24"]);
  return { state, statuses };
}

describe("secrets.TrustdController", () => {
  it("issues trustd's server certificate on a control plane: the API names, serverAuth, 24 h, from the OS CA", async () => {
    const s = new InMemoryState();
    startRuntime(s, [rootOSController(), apiCertSANsController(), trustdCertsController()]);
    publish(s, await configText("controlplane", "machine:\n  certSANs: [trustd.example.org]\n"));
    network(s, "cp1", ["10.5.0.2/24"]);
    await eventually(() => readSpec(s, TrustdCertsType, "trustd") !== undefined, 10_000);
    const t = readSpec(s, TrustdCertsType, "trustd")!;
    const cert = new X509Certificate(t.server.crt);
    const ca = new X509Certificate((await gen).secrets.certs.os.crt);
    expect(cert.subject).toBe("CN=cp1.example.org");
    expect(cert.subjectAltName).toBe("DNS:cp1, DNS:cp1.example.org, DNS:trustd.example.org, IP Address:10.5.0.2, IP Address:127.0.0.1");
    expect(cert.keyUsage).toEqual([ExtKeyUsage.ServerAuth]);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(Date.parse(cert.validTo) - Date.parse(cert.validFrom)).toBe(24 * 3_600_000);
    expect(t.acceptedCAs.map((c) => c.crt)).toEqual([(await gen).secrets.certs.os.crt]);

    // Unrelated events do not re-issue; new names do.
    const v1 = read(s, TrustdCertsType, "trustd")!.metadata.version;
    put(s, "network", NodeAddressType.type, "current-no-k8s", { addresses: ["10.5.0.2/24", "10.9.0.1/24"], sortAlgorithm: "v1" }, "network.NodeAddressController");
    await settle();
    expect(read(s, TrustdCertsType, "trustd")!.metadata.version).toBe(v1);
    network(s, "cp2", ["10.5.0.2/24"]);
    await eventually(() => new X509Certificate(readSpec(s, TrustdCertsType, "trustd")!.server.crt).subject === "CN=cp2.example.org", 10_000);
  });

  it("renews at half-life", async () => {
    const s = new InMemoryState();
    startRuntime(s, [rootOSController(), apiCertSANsController(), trustdCertsController({ validityMs: 400 })]);
    publish(s, await configText("controlplane"));
    network(s, "cp1", ["10.5.0.2/24"]);
    await eventually(() => readSpec(s, TrustdCertsType, "trustd") !== undefined, 10_000);
    const first = readSpec(s, TrustdCertsType, "trustd")!.server.crt;
    await eventually(() => readSpec(s, TrustdCertsType, "trustd")!.server.crt !== first, 5000, "renewed trustd certificate");
  });

  it("a worker has no trustd certificate", async () => {
    const s = new InMemoryState();
    startRuntime(s, [rootOSController(), apiCertSANsController(), trustdCertsController()]);
    publish(s, await configText("worker"));
    network(s, "w1", ["10.5.0.3/24"]);
    await eventually(() => s.list("secrets", "CertSANs.secrets.talos.dev").length > 0, 10_000);
    await settle();
    expect(readSpec(s, TrustdCertsType, "trustd")).toBeUndefined();
  });
});

describe("a worker's API certificate from trustd", () => {
  it("waits for the control-plane endpoints, then gets its server certificate signed by the OS CA", async () => {
    const cp = await controlPlane();
    const w = await worker(cp.port);
    await eventually(() => w.statuses.at(-1)?.waitingFor !== undefined, 10_000, "waiting for endpoints");
    expect(w.statuses.at(-1)).toEqual({ endpoints: [], waitingFor: expect.stringMatching(/control-plane endpoints/) });
    expect(readSpec(w.state, APICertsType, "api")).toBeUndefined();

    endpoints(w.state, ["127.0.0.1"]);
    await eventually(() => readSpec(w.state, APICertsType, "api") !== undefined, 10_000, "worker certificate");
    const api = readSpec(w.state, APICertsType, "api")!;
    const cert = new X509Certificate(api.server.crt);
    const osCA = (await gen).secrets.certs.os.crt;
    expect(cert.subject).toBe("CN=w1.example.org");
    expect(cert.subjectAltName).toBe("DNS:w1, DNS:w1.example.org, IP Address:10.5.0.3, IP Address:127.0.0.1");
    expect(cert.keyUsage).toEqual([ExtKeyUsage.ServerAuth]);
    expect(cert.verify(new X509Certificate(osCA).publicKey)).toBe(true);
    expect(cert.publicKey.asymmetricKeyType).toBe("ed25519"); // the OS CA's type
    expect(api.client).toBeUndefined();
    expect(api.acceptedCAs).toEqual([{ crt: osCA }]);
    expect(w.statuses.at(-1)).toBeUndefined();
    expect(cp.lines.some((l) => /^trustd: received CSR signing request from 127\.0\.0\.1:\d+: subject CN=w1\.example\.org /.test(l))).toBe(true);
  });

  it("a wrong machine.token is refused: the worker waits, naming the address and the refusal; the control plane logs it", async () => {
    const cp = await controlPlane();
    const w = await worker(cp.port, { patch: "machine:\n  token: wrong0.wrongwrongwrong0\n" });
    endpoints(w.state, ["127.0.0.1"]);
    const target = `127.0.0.1:${cp.port}`;
    await eventually(() => w.statuses.at(-1)?.lastError !== undefined, 10_000, "a refused attempt");
    expect(w.statuses.at(-1)).toEqual({ endpoints: [target], lastError: `${target}: rpc error: code = Unauthenticated desc = invalid token` });
    expect(workerWaitingReason(w.statuses.at(-1))).toBe(
      `${WORKER_WAITING_REASON}; asking ${target}; last attempt failed: ${target}: rpc error: code = Unauthenticated desc = invalid token`,
    );
    expect(readSpec(w.state, APICertsType, "api")).toBeUndefined();
    expect(cp.lines.some((l) => /^trustd: refused a certificate request from 127\.0\.0\.1:\d+: invalid token$/.test(l))).toBe(true);
    // Retried with backoff: more refusals arrive, none signed.
    await eventually(() => cp.lines.filter((l) => l.includes("refused")).length >= 3, 10_000, "retries");
    expect(cp.lines.some((l) => l.includes("received CSR"))).toBe(false);

    // The right token (a new config) is used at once.
    publish(w.state, await configText("worker"));
    await eventually(() => readSpec(w.state, APICertsType, "api") !== undefined, 10_000, "certificate with the right token");
    expect(w.statuses.at(-1)).toBeUndefined();
  });

  it("asks the endpoints in turn and retries until one answers", async () => {
    // trustd listens on 127.0.0.2 only; the worker knows 127.0.0.1 (nobody there) and 127.0.0.2.
    const probe = await controlPlane("127.0.0.2");
    const port = probe.port;
    await probe.server.close();
    const w = await worker(port);
    endpoints(w.state, ["127.0.0.2", "127.0.0.1"]);
    await eventually(() => (w.statuses.filter((s) => s?.lastError).length ?? 0) >= 2, 10_000, "two failed attempts");
    const tried = new Set(w.statuses.map((s) => s?.lastError?.split(": ")[0]).filter(Boolean));
    expect(tried).toEqual(new Set([`127.0.0.1:${port}`, `127.0.0.2:${port}`]));
    expect(w.statuses.find((s) => s?.lastError)!.endpoints).toEqual([`127.0.0.1:${port}`, `127.0.0.2:${port}`]);
    expect(w.statuses.find((s) => s?.lastError)!.lastError).toMatch(/rpc error: code = Unavailable desc = /);

    await controlPlane("127.0.0.2", port);
    await eventually(() => readSpec(w.state, APICertsType, "api") !== undefined, 10_000, "certificate after trustd came up");
  });

  it("asks again when the refresh is due", async () => {
    const cp = await controlPlane();
    const w = await worker(cp.port, { refreshMs: 300 });
    endpoints(w.state, ["127.0.0.1"]);
    await eventually(() => readSpec(w.state, APICertsType, "api") !== undefined, 10_000);
    const first = readSpec(w.state, APICertsType, "api")!.server.crt;
    await eventually(() => readSpec(w.state, APICertsType, "api")!.server.crt !== first, 10_000, "refreshed certificate");
    expect(cp.lines.filter((l) => l.includes("received CSR")).length).toBeGreaterThanOrEqual(2);
  });
});
