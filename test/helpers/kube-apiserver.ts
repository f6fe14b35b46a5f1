/**
 * A real kube-apiserver for tests: etcd and kube-apiserver from the kube-images cache run as host processes on
 * free loopback ports, with certificates from machinery/pki (cluster CA, serving certificate for 127.0.0.1, an
 * admin client certificate in system:masters). `kubectl` (from the Debian package) creates test objects.
 * Without the cached binaries `apiServerBinaries()` says why, for the test to skip.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodePrivateKeyPem, ExtKeyUsage, issueKubernetesAdminCert, issueLeaf, newECDSACA, newPrivateKey, type CertAndKey } from "../../src/machinery/pki/index.js";

const CACHE = process.env.MACHINED_CACHE ?? "/var/cache/machined";
const ARCH = process.arch === "arm64" ? "arm64" : "amd64";

export interface ApiServerBinaries {
  kube: string;
  etcd: string;
}

/** The cached binaries, or the reason they cannot be used. */
export function apiServerBinaries(): ApiServerBinaries | string {
  const kube = join(CACHE, `kube-images/kube/v1.37.2-${ARCH}/bin/bin/kube`);
  const etcd = join(CACHE, `kube-images/etcd/v3.7.3-${ARCH}/bin/bin/etcd`);
  for (const f of [kube, etcd]) if (!existsSync(f)) return `${f} is missing (make kube-images builds it)`;
  if (spawnSync("kubectl", ["version", "--client"], { stdio: "ignore" }).status !== 0) return "kubectl is not installed";
  return { kube, etcd };
}

export interface ApiServer {
  server: string;
  /** Admin kubeconfig (inline certificates), also written to `kubeconfigPath`. */
  kubeconfig: string;
  kubeconfigPath: string;
  ca: CertAndKey;
  /** Runs kubectl against the server; throws with its stderr on failure. */
  kubectl(args: string[], stdin?: string): string;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

const b64 = (s: string) => Buffer.from(s).toString("base64");

function kubeconfigText(server: string, ca: string, admin: CertAndKey): string {
  return `apiVersion: v1
kind: Config
clusters:
  - name: test
    cluster:
      server: ${server}
      certificate-authority-data: ${b64(ca)}
users:
  - name: admin
    user:
      client-certificate-data: ${b64(admin.crt)}
      client-key-data: ${b64(admin.key)}
contexts:
  - name: admin@test
    context: { cluster: test, user: admin }
current-context: admin@test
`;
}

function stopProcess(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => p.kill("SIGKILL"), 10_000);
    p.once("exit", () => {
      clearTimeout(t);
      resolve();
    });
    p.kill("SIGTERM");
  });
}

/** Polls GET /readyz with the admin certificate until it answers 200. */
async function waitReady(port: number, ca: string, admin: CertAndKey, procs: ChildProcess[], logs: () => string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = procs.find((p) => p.exitCode !== null);
    if (dead) throw new Error(`${dead.spawnfile} exited with ${dead.exitCode}:\n${logs()}`);
    const status = await new Promise<number>((resolve) => {
      const req = https.get({ host: "127.0.0.1", port, path: "/readyz", ca, cert: admin.crt, key: admin.key, agent: false, timeout: 2_000 }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("timeout", () => req.destroy());
      req.on("error", () => resolve(0));
    });
    if (status === 200) return;
    if (Date.now() > deadline) throw new Error(`kube-apiserver not ready after ${timeoutMs} ms:\n${logs()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export async function startApiServer(bin: ApiServerBinaries, opts: { readyTimeoutMs?: number } = {}): Promise<ApiServer> {
  const dir = mkdtempSync(join(tmpdir(), "machined-apiserver-"));
  const [etcdClient, etcdPeer, securePort] = [await freePort(), await freePort(), await freePort()];
  const ca = await newECDSACA("kubernetes");
  const serving = await issueLeaf(ca, {
    subject: { commonName: "kube-apiserver" },
    extKeyUsage: [ExtKeyUsage.ServerAuth],
    ipSANs: ["127.0.0.1", "10.96.0.1"],
    dnsSANs: ["localhost", "kubernetes", "kubernetes.default"],
    validityMs: 3_600_000,
  });
  const admin = await issueKubernetesAdminCert(ca);
  const sa = encodePrivateKeyPem(await newPrivateKey("ecdsa"));
  const file = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text, { mode: 0o600 });
    return p;
  };
  const caFile = file("ca.crt", ca.crt);
  const server = `https://127.0.0.1:${securePort}`;
  const kubeconfig = kubeconfigText(server, ca.crt, admin);
  const kubeconfigPath = file("admin.kubeconfig", kubeconfig);
  let log = "";
  const capture = (p: ChildProcess) => {
    const add = (d: Buffer) => {
      log = (log + d.toString()).slice(-20_000);
    };
    p.stdout?.on("data", add);
    p.stderr?.on("data", add);
    return p;
  };
  const etcd = capture(
    spawn(
      bin.etcd,
      [
        "--name=test",
        `--data-dir=${join(dir, "etcd")}`,
        `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
        `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
        `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-cluster=test=http://127.0.0.1:${etcdPeer}`,
        "--unsafe-no-fsync",
        "--log-level=warn",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    ),
  );
  const apiserver = capture(
    spawn(
      bin.kube,
      [
        "kube-apiserver",
        `--etcd-servers=http://127.0.0.1:${etcdClient}`,
        "--bind-address=127.0.0.1",
        `--secure-port=${securePort}`,
        // A documentation address: the endpoint reconciler is off, the test writes the kubernetes EndpointSlice itself.
        "--advertise-address=192.0.2.1",
        "--endpoint-reconciler-type=none",
        `--tls-cert-file=${file("apiserver.crt", serving.crt)}`,
        `--tls-private-key-file=${file("apiserver.key", serving.key)}`,
        `--client-ca-file=${caFile}`,
        `--service-account-key-file=${file("sa.key", sa)}`,
        `--service-account-signing-key-file=${join(dir, "sa.key")}`,
        "--service-account-issuer=https://kubernetes.default.svc",
        "--service-cluster-ip-range=10.96.0.0/12",
        "--authorization-mode=Node,RBAC",
        "--anonymous-auth=false",
        "--profiling=false",
        `--cert-dir=${join(dir, "certs")}`,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    ),
  );
  const procs = [etcd, apiserver];
  const stop = async () => {
    await stopProcess(apiserver);
    await stopProcess(etcd);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitReady(securePort, ca.crt, admin, procs, () => log, opts.readyTimeoutMs ?? 90_000);
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    server,
    kubeconfig,
    kubeconfigPath,
    ca,
    kubectl: (args, stdin) => {
      const r = spawnSync("kubectl", [`--kubeconfig=${kubeconfigPath}`, ...args], { input: stdin, encoding: "utf8" });
      if (r.status !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.stderr}`);
      return r.stdout;
    },
    stop,
  };
}
