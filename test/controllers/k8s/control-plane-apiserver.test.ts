/**
 * The proof that the control plane's secrets and flags are right: etcd 3.7.3 and kube-apiserver v1.37.2 (the
 * cached binaries `make kube-images` builds) run as host processes on free loopback ports with exactly the
 * command line the kube-apiserver StaticPod carries and the files the render controllers wrote — only the node
 * paths are moved under a temporary root, the etcd port and the bind/advertise address are loopback ones. Then
 * /readyz and authenticated requests with the kubeconfig from the real Kubeconfig API, the component kubeconfigs,
 * a service account token and an encrypted Secret in etcd.
 *
 * Needs no root (files stay ours without it). Skips, saying why, when the binaries are not in the cache.
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import * as https from "node:https";
import * as net from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { MachineService } from "../../../src/machinery/api/gen/machine/machine_pb.js";
import { DataSchema } from "../../../src/machinery/api/gen/common/common_pb.js";
import { generateConfigs } from "../../../src/machinery/generate/index.js";
import { loadConfig, patchConfig, parsePatch } from "../../../src/machinery/config/index.js";
import { newResource } from "../../../src/machinery/resources/resource.js";
import { readSpec } from "../../../src/machinery/resources/read.js";
import { CONFIG_NS, MachineConfigType, MachineTypeType } from "../../../src/machinery/resources/types/config.js";
import { HostnameStatusType, NetworkStatusType, NodeAddressType } from "../../../src/machinery/resources/types/network.js";
import { EtcdCertsType, EtcdRootType, KubernetesCertsType } from "../../../src/machinery/resources/types/secrets.js";
import { TimeStatusType } from "../../../src/machinery/resources/types/time.js";
import { K8S_NS, StaticPodType } from "../../../src/machinery/resources/types/k8s.js";
import { RUNTIME_NS, ServiceType } from "../../../src/machinery/resources/types/runtime.js";
import { tlsKeyPem } from "../../../src/machinery/pki/pem.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { fakeLoopbackHttp } from "../../../src/host/loopback-http.js";
import { rootEtcdController } from "../../../src/controllers/secrets/root-etcd.js";
import { etcdCertsController } from "../../../src/controllers/secrets/etcd-certs.js";
import { kubernetesControlPlaneControllers } from "../../../src/controllers/k8s/index.js";
import { eventually, put, startRuntime } from "../runtime/harness.js";
import { apply, insecureClient, mtlsClient, startNode, talosconfigCreds, version, eventually as eventuallyAsync } from "../../api/harness.js";

const CACHE = process.env.MACHINED_CACHE ?? "/var/cache/machined";
const ARCH = process.arch === "arm64" ? "arm64" : "amd64";
const find = (...candidates: string[]) => candidates.find((p) => existsSync(p));
const KUBE = find(`${CACHE}/kube-images/kube/v1.37.2-${ARCH}/bin/bin/kube`, `${CACHE}/kube-images/kube/v1.37.2-${ARCH}/bin/kube`);
const ETCD_DIR = find(`${CACHE}/kube-images/etcd/v3.7.3-${ARCH}/bin/bin`, `${CACHE}/kube-images/etcd/v3.7.3-${ARCH}/bin`);
const ETCD = ETCD_DIR && find(`${ETCD_DIR}/etcd`);
const ETCDCTL = ETCD_DIR && find(`${ETCD_DIR}/etcdctl`);
const missing = !KUBE ? "kube-apiserver v1.37.2 (the kube multi-call binary)" : !ETCD ? "etcd v3.7.3" : undefined;
if (missing) console.log(`skipping the kube-apiserver integration test: ${missing} is not in ${CACHE}/kube-images (run make kube-images)`);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

interface Creds {
  ca: string;
  cert?: string;
  key?: string;
  token?: string;
}

/** An HTTPS request to 127.0.0.1:port; `servername` is the name the server certificate is checked against. */
function request(port: number, creds: Creds, method: string, urlPath: string, body?: unknown, servername = "127.0.0.1"): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = https.request(
      {
        host: "127.0.0.1",
        port,
        method,
        path: urlPath,
        servername: servername === "127.0.0.1" ? undefined : servername,
        ca: creds.ca,
        cert: creds.cert,
        key: creds.key,
        headers: { ...(data ? { "content-type": "application/json" } : {}), ...(creds.token ? { authorization: `Bearer ${creds.token}` } : {}) },
        timeout: 10_000,
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end(data);
  });
}

/** The server, CA and client credentials of a kubeconfig. */
function kubeconfigCreds(text: string): { server: URL; creds: Creds } {
  const doc = parse(text);
  const d = (b: string) => Buffer.from(b, "base64").toString("utf8");
  return {
    server: new URL(doc.clusters[0].cluster.server),
    creds: {
      ca: d(doc.clusters[0].cluster["certificate-authority-data"]),
      cert: d(doc.users[0].user["client-certificate-data"]),
      key: tlsKeyPem(d(doc.users[0].user["client-key-data"])),
    },
  };
}

async function until<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined>, log: () => string, proc?: ChildProcess): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc && proc.exitCode !== null) throw new Error(`the process exited (${proc.exitCode}) while waiting for ${what}; output:\n${log().slice(-4000)}`);
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; output:\n${log().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const procs: ChildProcess[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  // Nothing of the processes' state is needed afterwards: SIGTERM, and SIGKILL for whatever is still there after 3 s.
  await Promise.all(
    procs.map(async (p) => {
      if (p.exitCode !== null || p.signalCode !== null) return;
      const exited = new Promise((r) => p.once("exit", r));
      p.kill("SIGTERM");
      const timer = setTimeout(() => p.kill("SIGKILL"), 3000);
      await exited;
      clearTimeout(timer);
    }),
  );
  for (const c of cleanups.reverse()) await c();
});

function run(bin: string, args: string[]): { proc: ChildProcess; output: () => string } {
  let out = "";
  const proc = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
  proc.stdout!.on("data", (c) => (out += c));
  proc.stderr!.on("data", (c) => (out += c));
  procs.push(proc);
  return { proc, output: () => out };
}

describe.skipIf(missing !== undefined)("kube-apiserver with the control plane's secrets, configs and flags", () => {
  it("starts on etcd, is ready, and serves the admin, the components and service accounts", async () => {
    const [apiPort, etcdPort, peerPort] = [await freePort(), await freePort(), await freePort()];
    const endpoint = `https://127.0.0.1:${apiPort}`;
    const gen = await generateConfigs({ clusterName: "itest", endpoint, talosVersion: "v1.13" });
    const patch = `machine:\n  features:\n    kubePrism:\n      enabled: false\ncluster:\n  controlPlane:\n    localAPIServerPort: ${apiPort}\n`;
    const config = new TextDecoder().decode(patchConfig(loadConfig(gen.controlplane), [parsePatch(patch)]).encode());

    const root = mkdtempSync(path.join(tmpdir(), "machined-apiserver-"));
    cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    const s = new InMemoryState();
    startRuntime(s, [rootEtcdController(), etcdCertsController(), ...kubernetesControlPlaneControllers({ root, http: fakeLoopbackHttp() })]);
    const cfg = loadConfig(config);
    s.apply(newResource({ namespace: CONFIG_NS, type: MachineConfigType.type, id: "v1alpha1" }, cfg), "");
    s.apply(newResource({ namespace: CONFIG_NS, type: MachineTypeType.type, id: "machine-type" }, cfg.machineType()), "config.MachineTypeController");
    put(s, "network", HostnameStatusType.type, "hostname", { hostname: "cp1", domainname: "" }, "network.HostnameSpecController");
    put(s, "network", NodeAddressType.type, "accumulative-no-k8s", { addresses: ["127.0.0.1/8"], sortAlgorithm: "v1" }, "network.NodeAddressController");
    put(s, "network", NetworkStatusType.type, "status", { addressReady: true, connectivityReady: true, hostnameReady: true, etcFilesReady: true }, "network.StatusController");
    put(s, "runtime", TimeStatusType.type, "node", { synced: true, epoch: 0, syncDisabled: true }, "time.SyncController");
    await eventually(() => readSpec(s, EtcdCertsType, "etcd") !== undefined && readSpec(s, KubernetesCertsType, "k8s-certs") !== undefined, 30_000, "certificates");

    // etcd as its service would run it, with the EtcdSecrets of this node (server cert for the client port, CA).
    const etcdCerts = readSpec(s, EtcdCertsType, "etcd")!;
    const etcdCA = readSpec(s, EtcdRootType, "etcd")!.etcdCA.crt;
    const pki = path.join(root, "etcd-pki");
    mkdirSync(pki, { recursive: true });
    const files = { "ca.crt": etcdCA, "server.crt": etcdCerts.etcd.crt, "server.key": etcdCerts.etcd.key, "admin.crt": etcdCerts.etcdAdmin.crt, "admin.key": etcdCerts.etcdAdmin.key };
    for (const [n, t] of Object.entries(files)) writeFileSync(path.join(pki, n), t, { mode: 0o600 });
    const etcdURL = `https://127.0.0.1:${etcdPort}`;
    const etcd = run(ETCD!, [
      "--name=cp1",
      `--data-dir=${path.join(root, "var/lib/etcd")}`,
      `--listen-client-urls=${etcdURL}`,
      `--advertise-client-urls=${etcdURL}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=cp1=http://127.0.0.1:${peerPort}`,
      "--client-cert-auth=true",
      `--trusted-ca-file=${pki}/ca.crt`,
      `--cert-file=${pki}/server.crt`,
      `--key-file=${pki}/server.key`,
    ]);
    const etcdCreds = { ca: etcdCA, cert: etcdCerts.etcdAdmin.crt, key: tlsKeyPem(etcdCerts.etcdAdmin.key) };
    await until("etcd /health", 30_000, async () => ((await request(etcdPort, etcdCreds, "GET", "/health")).text.includes('"health":"true"') ? true : undefined), etcd.output, etcd.proc);
    // What the static pod controller waits for.
    put(s, RUNTIME_NS, ServiceType.type, "etcd", { running: true, healthy: true, unknown: false }, "v1alpha1.ServiceController");
    await eventually(() => readSpec(s, StaticPodType, "kube-apiserver", K8S_NS) !== undefined, 10_000, "the kube-apiserver static pod");

    // The pod's command, with node paths under the root and loopback in place of the node's addresses.
    const pod = readSpec(s, StaticPodType, "kube-apiserver", K8S_NS) as { spec: { containers: { command: string[] }[] } };
    const [binary, ...flags] = pod.spec.containers[0].command;
    expect(binary).toBe("/usr/local/bin/kube-apiserver");
    const args = flags.map((f) => {
      if (f === "--etcd-servers=https://127.0.0.1:2379") return `--etcd-servers=${etcdURL}`;
      if (f === "--bind-address=0.0.0.0") return "--bind-address=127.0.0.1";
      // The apiserver refuses a loopback advertise address; it only records it (in the `kubernetes` endpoints),
      // it never dials it, so a documentation address stands in for the pod IP.
      if (f === "--advertise-address=$(POD_IP)") return "--advertise-address=192.0.2.1";
      return f.replace(/=\/(system|var)\//, `=${root}/$1/`);
    });
    expect(args).toContain(`--secure-port=${apiPort}`);
    const apiserver = run(KUBE!, ["kube-apiserver", ...args]);

    // The admin kubeconfig from the Kubeconfig API of a node with the same config.
    const h = await startNode();
    cleanups.push(() => h.stop());
    const c = insecureClient(h);
    await apply(c, config);
    c.close();
    const admin = mtlsClient(h, talosconfigCreds(gen.talosconfig));
    cleanups.push(() => admin.close());
    await eventuallyAsync(() => version(admin));
    const chunks = await admin.stream(MachineService, "Kubeconfig", EmptySchema, DataSchema, {});
    const tar = gunzipSync(Buffer.from(chunks[0].bytes));
    const size = parseInt(tar.subarray(124, 136).toString(), 8);
    const kube = kubeconfigCreds(tar.subarray(512, 512 + size).toString());
    expect(kube.server.href).toBe(`${endpoint}/`);

    const ready = await until(
      "kube-apiserver /readyz",
      60_000,
      async () => {
        const r = await request(apiPort, kube.creds, "GET", "/readyz");
        return r.status === 200 ? r : undefined;
      },
      apiserver.output,
      apiserver.proc,
    );
    expect(ready.text).toBe("ok");

    // Anonymous requests are refused (--anonymous-auth=false).
    expect((await request(apiPort, { ca: kube.creds.ca }, "GET", "/version")).status).toBe(401);
    // The admin is system:masters.
    const ns = await request(apiPort, kube.creds, "GET", "/api/v1/namespaces/kube-system");
    expect(ns.status).toBe(200);
    const whoami = async (creds: Creds, servername?: string) => {
      const r = await request(apiPort, creds, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" }, servername);
      expect(r.status, r.text).toBe(201);
      return JSON.parse(r.text).status.userInfo as { username: string; groups: string[] };
    };
    expect(await whoami(kube.creds)).toMatchObject({ username: "admin", groups: expect.arrayContaining(["system:masters"]) });

    // The component and localhost admin kubeconfigs point at https://localhost:<port>, which the serving cert names.
    const certs = readSpec(s, KubernetesCertsType, "k8s-certs")!;
    for (const [text, user] of [
      [certs.schedulerKubeconfig, "system:kube-scheduler"],
      [certs.controllerManagerKubeconfig, "system:kube-controller-manager"],
      [certs.localhostAdminKubeconfig, "talos:admin"],
    ] as const) {
      const k = kubeconfigCreds(text);
      expect(k.server.href).toBe(`https://localhost:${apiPort}/`);
      expect((await whoami(k.creds, "localhost")).username).toBe(user);
    }

    // Service account tokens are signed with service-account.key and verified with service-account.pub.
    expect((await request(apiPort, kube.creds, "POST", "/api/v1/namespaces/default/serviceaccounts", { metadata: { name: "itest" } })).status).toBe(201);
    const tr = await request(apiPort, kube.creds, "POST", "/api/v1/namespaces/default/serviceaccounts/itest/token", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { audiences: [endpoint] },
    });
    expect(tr.status, tr.text).toBe(201);
    const token = JSON.parse(tr.text).status.token as string;
    expect((await whoami({ ca: kube.creds.ca, token })).username).toBe("system:serviceaccount:default:itest");

    // Secrets are stored encrypted with the secretbox key (encryptionconfig.yaml).
    expect((await request(apiPort, kube.creds, "POST", "/api/v1/namespaces/default/secrets", { metadata: { name: "s1" }, stringData: { a: "plain-value" } })).status).toBe(201);
    if (ETCDCTL) {
      const raw = execFileSync(ETCDCTL, [
        `--endpoints=${etcdURL}`,
        `--cacert=${pki}/ca.crt`,
        `--cert=${pki}/admin.crt`,
        `--key=${pki}/admin.key`,
        "get",
        "/registry/secrets/default/s1",
        "--print-value-only",
      ]);
      expect(raw.subarray(0, 26).toString()).toBe("k8s:enc:secretbox:v1:key2:");
      expect(raw.includes(Buffer.from("plain-value"))).toBe(false);
    }
  }, 180_000);
});
