/**
 * A worker joins Kubernetes: two sandboxed nodes on one lab bridge (test/helpers/sandbox.ts), a control plane and a
 * worker from one generated cluster, configured over the real API; the loopback registry stands in for
 * registry.k8s.io, ghcr.io and docker.io. Bootstrap once → the worker's kubelet gets its client certificate by TLS
 * bootstrap (the bootstrap token of cluster.token, a CSR the controller-manager approves through the bootstrap
 * manifests' RBAC) → both nodes Ready, kube-proxy and flannel running on the worker (DaemonSets from the control
 * plane) → a pod scheduled on the worker serves HTTP and a pod on the control plane fetches it by pod IP across the
 * bridge (flannel vxlan). The worker runs no etcd and no control plane.
 *
 * Needs root, dist/ (npm run build) and the images in the loopback registry (make kube-images && make registry);
 * skips saying which is missing.
 */
import * as k8s from "@kubernetes/client-node";
import { X509Certificate } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { applyPatches, parsePatch } from "../../src/machinery/config/patch/index.js";
import { generateConfigs, type GeneratedConfigs } from "../../src/machinery/generate/index.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { MachineService, ApplyConfigurationRequest_Mode as Mode } from "../../src/machinery/api/gen/machine/machine_pb.js";
import { DataSchema } from "../../src/machinery/api/gen/common/common_pb.js";
import { State } from "../../src/machinery/api/gen/cosi/state_pb.js";
import * as cosi from "../../src/machinery/api/gen/cosi/state_pb.js";
import * as cl from "../../src/machinery/api/gen/cluster/cluster_pb.js";
import { ClusterService } from "../../src/machinery/api/gen/cluster/cluster_pb.js";
import { status } from "@grpc/grpc-js";
import { TestClient, insecureTls, mtls } from "../helpers/client.js";
import { talosconfigCreds, type Creds } from "../api/harness.js";
import { mirrorsPatch, sandboxSkipReason, startLab, startSandbox, type Lab, type SandboxNode, until, untarOne } from "../helpers/sandbox.js";

const IMAGES = ["siderolabs/kubelet", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "coredns/coredns", "siderolabs/flannel", "pause", "library/busybox"];
const skip = await sandboxSkipReason({ images: IMAGES });
if (skip) console.log(`skipping the workers-join test: ${skip}`);

const MIN = 60_000;
const CP = "wj-cp";
const WORKER = "wj-w";

const ready = (n: k8s.V1Node) => n.status?.conditions?.find((c) => c.type === "Ready");

describe.skipIf(!!skip)("a worker joins Kubernetes through the kubelet's TLS bootstrap", () => {
  let lab: Lab;
  let cp: SandboxNode, worker: SandboxNode;
  let cfgs: GeneratedConfigs;
  let creds: Creds;
  const clients: TestClient[] = [];
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  const t0 = Date.now();
  const figures: Record<string, number> = {};
  const mark = (what: string) => {
    figures[what] = Math.round((Date.now() - t0) / 1000);
    console.log(`[workers-join +${figures[what]}s] ${what}`);
  };
  const client = (n: SandboxNode, tls = mtls(creds.ca, creds.crt, creds.key)) => {
    const c = new TestClient(`${n.ip}:50000`, tls);
    clients.push(c);
    return c;
  };

  const diagnostics = async () => {
    const out: string[] = [];
    for (const n of [cp, worker]) {
      const services = await client(n)
        .unary(MachineService, "ServiceList", EmptySchema, m.ServiceListResponseSchema, {}, { deadlineMs: 20_000 })
        .catch(() => undefined);
      for (const s of services?.messages[0].services ?? []) out.push(`${n.name} ${s.id}: ${s.state} ${s.health?.lastMessage ?? ""} | ${s.events?.events.slice(-2).map((e) => e.msg).join(" | ")}`);
    }
    const nodes = await core?.listNode().catch(() => undefined);
    for (const n of nodes?.items ?? []) out.push(`node ${n.metadata?.name}: Ready=${ready(n)?.status} ${ready(n)?.message ?? ""} podCIDR=${n.spec?.podCIDR}`);
    const pods = await core?.listPodForAllNamespaces().catch(() => undefined);
    for (const p of pods?.items ?? []) out.push(`pod ${p.metadata?.namespace}/${p.metadata?.name} on ${p.spec?.nodeName}: ${p.status?.phase} ${(p.status?.containerStatuses ?? []).map((s) => JSON.stringify(s.state)).join(" ")}`);
    for (const n of [cp, worker]) out.push(`--- ${n.name} log\n${n.log().split("\n").slice(-25).join("\n")}`);
    return out.join("\n");
  };
  const explained = async <T>(p: Promise<T>): Promise<T> => {
    try {
      return await p;
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${await diagnostics()}`);
    }
  };

  beforeAll(async () => {
    lab = await startLab("wjoin", "10.214.83");
    [cp, worker] = await Promise.all([startSandbox(lab, CP, 2), startSandbox(lab, WORKER, 3)]);
    mark("sandboxes up (maintenance)");
    cfgs = await generateConfigs({ clusterName: "wjoin", endpoint: `https://${cp.ip}:6443`, talosVersion: "v1.13" });
    creds = talosconfigCreds(cfgs.talosconfig);
    const hostname = (name: string) => `machine:\n  network:\n    hostname: ${name}\n`;
    const docs: [SandboxNode, string][] = [
      // The control plane keeps its NoSchedule taint (upstream's default): the workload can only land on the worker.
      [cp, applyPatches(cfgs.controlplane, [parsePatch(mirrorsPatch(lab.gateway)), parsePatch(hostname(CP))])],
      // The worker's cluster.controlPlane.endpoint is the control plane's address (the generated bundle's).
      [worker, applyPatches(cfgs.worker, [parsePatch(mirrorsPatch(lab.gateway)), parsePatch(hostname(WORKER))])],
    ];
    for (const [n, cfg] of docs) {
      await client(n, insecureTls()).unary(
        MachineService,
        "ApplyConfiguration",
        m.ApplyConfigurationRequestSchema,
        m.ApplyConfigurationResponseSchema,
        { data: new TextEncoder().encode(cfg), mode: Mode.AUTO },
        { deadlineMs: 2 * MIN },
      );
    }
    await until("the control plane's API with the cluster's credentials", 2 * MIN, () =>
      client(cp).unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {}, { deadlineMs: 10_000 }),
    );
    mark("configs applied");
  }, 5 * MIN);

  afterAll(async () => {
    console.log(`workers-join figures (s since start): ${JSON.stringify(figures)}`);
    for (const c of clients) c.close();
    await Promise.all([cp?.stop(), worker?.stop()]);
    await lab?.stop();
  }, 4 * MIN);

  it("bootstraps once; both nodes are Ready, the worker through an approved kubelet client CSR", async () => {
    await until("etcd ready for bootstrap", 3 * MIN, () =>
      client(cp).unary(MachineService, "Bootstrap", m.BootstrapRequestSchema, m.BootstrapResponseSchema, {}, { deadlineMs: 20_000 }),
    );
    mark("bootstrapped");
    const chunks = await until("a kubeconfig", 2 * MIN, async () =>
      (await client(cp).stream(MachineService, "Kubeconfig", EmptySchema, DataSchema, {}, { deadlineMs: 20_000 })).map((x) => x.bytes),
    );
    kc = new k8s.KubeConfig();
    kc.loadFromString(untarOne(Buffer.concat(chunks), "kubeconfig"));
    core = kc.makeApiClient(k8s.CoreV1Api);

    await explained(
      until("both nodes Ready", 8 * MIN, async () => {
        const nodes = (await core.listNode()).items;
        expect(nodes.map((n) => n.metadata?.name).sort()).toEqual([CP, WORKER]);
        for (const n of nodes) expect(ready(n)?.status, `${n.metadata?.name} Ready: ${ready(n)?.message}`).toBe("True");
      }),
    );
    mark("both nodes Ready");

    const w = await core.readNode({ name: WORKER });
    // The worker registered with its own address (the lab bridge), not the control plane's or a pod address.
    expect(w.status?.addresses).toContainEqual({ type: "InternalIP", address: worker.ip });
    expect(w.metadata?.labels?.["node-role.kubernetes.io/control-plane"]).toBeUndefined();
    // No control-plane taint on a worker (the node lifecycle's own not-ready taint may still be going away).
    expect((w.spec?.taints ?? []).filter((t) => t.key === "node-role.kubernetes.io/control-plane")).toEqual([]);
    const c = await core.readNode({ name: CP });
    expect(c.status?.addresses).toContainEqual({ type: "InternalIP", address: cp.ip });
    expect(c.spec?.taints).toContainEqual(expect.objectContaining({ key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" }));
    // Distinct pod CIDRs: flannel's subnets per node come from the controller-manager's allocation.
    expect(w.spec?.podCIDR).toBeTruthy();
    expect(w.spec?.podCIDR).not.toBe(c.spec?.podCIDR);

    // The worker's client certificate came from a CSR filed with the bootstrap token and approved automatically:
    // requester system:bootstrap:<token id> (group system:bootstrappers:nodes), the kubelet client signer,
    // approved, and its certificate names system:node:<worker>.
    const tokenId = cfgs.secrets.secrets.bootstrapToken.split(".")[0];
    const csrs = (await kc.makeApiClient(k8s.CertificatesV1Api).listCertificateSigningRequest()).items;
    const mine = csrs.filter((x) => x.spec.username === `system:bootstrap:${tokenId}`);
    expect(mine.length, `CSRs: ${csrs.map((x) => `${x.metadata?.name} by ${x.spec.username}`).join(", ")}`).toBeGreaterThan(0);
    const issued = mine
      .filter((x) => x.status?.certificate)
      .map((x) => ({ csr: x, cert: new X509Certificate(Buffer.from(x.status!.certificate!, "base64")) }))
      .find((x) => x.cert.subject.includes(`CN=system:node:${WORKER}`));
    expect(issued, "an issued certificate for the worker's kubelet").toBeDefined();
    expect(issued!.csr.spec.signerName).toBe("kubernetes.io/kube-apiserver-client-kubelet");
    expect(issued!.csr.spec.groups).toContain("system:bootstrappers:nodes");
    expect(issued!.csr.status?.conditions?.find((x) => x.type === "Approved")?.status).toBe("True");
    expect(issued!.cert.subject).toContain("O=system:nodes");
    expect(issued!.cert.verify(new X509Certificate(cfgs.secrets.certs.k8s.crt).publicKey)).toBe(true);
    mark("worker CSR checked");
  }, 15 * MIN);

  it("the worker runs kube-proxy and flannel from the control plane's DaemonSets, and no etcd or control plane", async () => {
    await explained(
      until("kube-proxy and flannel Running and ready on the worker", 5 * MIN, async () => {
        const pods = (await core.listNamespacedPod({ namespace: "kube-system", fieldSelector: `spec.nodeName=${WORKER}` })).items;
        for (const prefix of ["kube-proxy-", "kube-flannel-"]) {
          const p = pods.find((x) => x.metadata?.name?.startsWith(prefix));
          expect(p?.status?.phase, `${prefix}* on ${WORKER}`).toBe("Running");
          expect(p?.status?.containerStatuses?.every((s) => s.ready), `${p?.metadata?.name} ready`).toBe(true);
        }
        // Nothing of the control plane was scheduled there (no static pods, nothing node-local to the control plane).
        expect(pods.filter((x) => /^kube-(apiserver|controller-manager|scheduler)-/.test(x.metadata?.name ?? ""))).toEqual([]);
      }),
    );
    const services = (await client(worker).unary(MachineService, "ServiceList", EmptySchema, m.ServiceListResponseSchema, {})).messages[0].services;
    const ids = services.map((s) => s.id);
    expect(ids).toContain("kubelet");
    expect(ids).not.toContain("etcd");
    expect(ids).not.toContain("trustd");
    expect(services.find((s) => s.id === "kubelet")).toMatchObject({ state: "Running", health: { healthy: true } });

    // The worker's kubelet talks to the API servers through its own KubePrism (enabled in generated configs), which
    // balances over the control-plane endpoint and the discovered control planes.
    const get = async (namespace: string, type: string, id: string) =>
      (await client(worker).unary(State, "Get", cosi.GetRequestSchema, cosi.GetResponseSchema, { namespace, type, id })).resource?.spec?.yamlSpec ?? "";
    expect(await get("secrets", "KubeletSecrets.secrets.talos.dev", "kubelet")).toMatch(/^endpoint: https:\/\/127\.0\.0\.1:7445$/m);
    expect(await get("k8s", "KubePrismStatuses.kubernetes.talos.dev", "k8s-loadbalancer")).toMatch(/^healthy: true$/m);
    // With the identity its TLS bootstrap gave it, the worker watches its own Node and the API server endpoints
    // (the bootstrap manifests' system:talos-nodes role).
    await until("the worker's NodeStatus and kube-apiserver Endpoint", 2 * MIN, async () => {
      expect(await get("k8s", "NodeStatuses.kubernetes.talos.dev", WORKER)).toMatch(/^nodeReady: true$/m);
      expect(await get("controlplane", "Endpoints.kubernetes.talos.dev", "kube-apiserver")).toContain(`- ${cp.ip}`);
    });
    mark("worker DaemonSets running");
  }, 6 * MIN);

  it("a pod on the control plane reaches a pod on the worker by pod IP over flannel", async () => {
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    await apps.createNamespacedDeployment({
      namespace: "default",
      body: {
        metadata: { name: "web" },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: "web" } },
          template: {
            metadata: { labels: { app: "web" } },
            spec: {
              nodeSelector: { "kubernetes.io/hostname": WORKER },
              containers: [
                {
                  name: "httpd",
                  image: "docker.io/library/busybox:1.37",
                  command: ["sh", "-c", "mkdir -p /www && echo \"served by $(hostname)\" > /www/index.html && echo \"httpd on $(hostname)\" && exec httpd -f -p 8080 -h /www"],
                  ports: [{ containerPort: 8080 }],
                  readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 2 },
                },
              ],
            },
          },
        },
      },
    });
    const server = await explained(
      until("the web pod Running and ready on the worker", 5 * MIN, async () => {
        const p = (await core.listNamespacedPod({ namespace: "default", labelSelector: "app=web" })).items[0];
        expect(p?.spec?.nodeName).toBe(WORKER);
        expect(p?.status?.conditions?.find((x) => x.type === "Ready")?.status).toBe("True");
        return p;
      }),
    );
    const podIP = server.status!.podIP!;
    const w = await core.readNode({ name: WORKER });
    expect(inCidr(podIP, w.spec!.podCIDR!), `${podIP} in the worker's pod CIDR ${w.spec?.podCIDR}`).toBe(true);
    // Its log comes through the worker's kubelet (the API server's kubelet client certificate against the CA the
    // kubelet was given).
    expect(await core.readNamespacedPodLog({ name: server.metadata!.name!, namespace: "default" })).toBe(`httpd on ${server.metadata!.name}\n`);
    mark("web pod ready on the worker");

    // The client: pinned to the control plane (tolerating its taint); it retries only while the route may still be
    // coming up, and fails the pod if the server never answers. (`timeout`, not `wget -T`: the image's busybox is
    // Debian's 1.35 build, whose `wget -T` segfaults.)
    await core.createNamespacedPod({
      namespace: "default",
      body: {
        metadata: { name: "fetch" },
        spec: {
          restartPolicy: "Never",
          nodeSelector: { "kubernetes.io/hostname": CP },
          tolerations: [{ key: "node-role.kubernetes.io/control-plane", operator: "Exists", effect: "NoSchedule" }],
          containers: [
            {
              name: "wget",
              image: "docker.io/library/busybox:1.37",
              command: ["sh", "-c", `for i in $(seq 1 30); do timeout 5 wget -q -O - http://${podIP}:8080/ && exit 0; sleep 2; done; exit 1`],
            },
          ],
        },
      },
    });
    const fetched = await explained(
      until("the fetch pod to finish", 5 * MIN, async () => {
        const p = await core.readNamespacedPod({ name: "fetch", namespace: "default" });
        expect(["Succeeded", "Failed"]).toContain(p.status?.phase);
        return p;
      }),
    );
    expect(fetched.spec?.nodeName).toBe(CP);
    const c = await core.readNode({ name: CP });
    expect(inCidr(fetched.status!.podIP!, c.spec!.podCIDR!), `client ${fetched.status?.podIP} in ${c.spec?.podCIDR}`).toBe(true);
    const log = await core.readNamespacedPodLog({ name: "fetch", namespace: "default" });
    expect(fetched.status?.phase, `fetch log: ${log}`).toBe("Succeeded");
    expect(log.trim()).toBe(`served by ${server.metadata!.name}`);
    mark("cross-node pod traffic");
  }, 12 * MIN);

  it("a restarted worker kubelet keeps its client certificate (no second bootstrap) and the node stays Ready", async () => {
    const certs = kc.makeApiClient(k8s.CertificatesV1Api);
    const tokenId = cfgs.secrets.secrets.bootstrapToken.split(".")[0];
    const bootstrapCSRs = async () => (await certs.listCertificateSigningRequest()).items.filter((x) => x.spec.username === `system:bootstrap:${tokenId}`).length;
    const before = await bootstrapCSRs();
    const since = new Date();
    await client(worker).unary(MachineService, "ServiceRestart", m.ServiceRestartRequestSchema, m.ServiceRestartResponseSchema, { id: "kubelet" });
    await explained(
      until("the worker's kubelet back and its node Ready after the restart", 4 * MIN, async () => {
        const n = await core.readNode({ name: WORKER });
        const r = ready(n);
        expect(r?.status).toBe("True");
        // The Node's heartbeat moved on after the restart: the new kubelet is the one reporting.
        expect(new Date(n.status!.conditions!.find((c) => c.type === "Ready")!.lastHeartbeatTime!).getTime()).toBeGreaterThan(since.getTime());
        const svc = (await client(worker).unary(MachineService, "ServiceList", EmptySchema, m.ServiceListResponseSchema, {})).messages[0].services.find((x) => x.id === "kubelet");
        expect(svc).toMatchObject({ state: "Running", health: { healthy: true } });
      }),
    );
    expect(await bootstrapCSRs()).toBe(before);
    mark("kubelet restarted");
  }, 6 * MIN);

  it("the control plane's server-side health check reads the worker through forwarding: every check OK; an unreachable node fails it by name", async () => {
    const health = (clusterInfo: { controlPlaneNodes: string[]; workerNodes: string[] }, waitSeconds: number, lines: string[]) =>
      client(cp).stream(ClusterService, "HealthCheck", cl.HealthCheckRequestSchema, cl.HealthCheckProgressSchema, { waitTimeout: { seconds: BigInt(waitSeconds), nanos: 0 }, clusterInfo }, {
        deadlineMs: (waitSeconds + 60) * 1000,
        onMessage: (x) => lines.push(x.message),
      });
    const lines: string[] = [];
    await explained(health({ controlPlaneNodes: [cp.ip], workerNodes: [worker.ip] }, 5 * 60, lines).catch((err: Error) => Promise.reject(new Error(`${err.message}\n${lines.join("\n")}`))));
    mark("health with the worker passed");
    // Upstream names the nodes in its first line; the checks' lines name none when they pass.
    expect(lines[0]).toBe(`discovered nodes: ["${cp.ip}" "${worker.ip}"]`);
    expect(lines.join("\n")).not.toMatch(/SKIP|not reachable/);
    const checks = [
      "etcd to be healthy", "etcd members to be consistent across nodes", "etcd members to be control plane nodes", "apid to be ready",
      "all nodes memory sizes", "all nodes disk sizes", "no diagnostics", "kubelet to be healthy", "all nodes to finish boot sequence",
      "all k8s nodes to report", "all control plane static pods to be running", "all control plane components to be ready",
      "all k8s nodes to report ready", "kube-proxy to report ready", "coredns to report ready", "all k8s nodes to report schedulable",
    ];
    expect(lines.filter((l) => l.endsWith(": OK")), lines.join("\n")).toEqual(checks.map((x) => `waiting for ${x}: OK`));

    // A third node nobody answers for (a free address on the lab bridge): the check that asks it fails within the
    // wait timeout, its last error naming that node.
    const ghost = `${lab.gateway.split(".").slice(0, 3).join(".")}.9`;
    const started = Date.now();
    const failing: string[] = [];
    const err = (await health({ controlPlaneNodes: [cp.ip], workerNodes: [worker.ip, ghost] }, 20, failing).then(
      () => undefined,
      (e: unknown) => e,
    )) as { code?: number; details?: string } | undefined;
    expect(Date.now() - started).toBeLessThan(40_000);
    expect(err?.code, failing.join("\n")).toBe(status.DEADLINE_EXCEEDED);
    expect(err?.details).toMatch(new RegExp(`^context deadline exceeded: waiting for apid to be ready: error getting version from node "${ghost.replace(/\./g, "\\.")}": rpc error: code = \\w+ desc = `));
    expect(failing).toContain("waiting for etcd to be healthy: OK");
    expect(failing.some((l) => l.startsWith(`waiting for apid to be ready: error getting version from node "${ghost}"`)), failing.join("\n")).toBe(true);
    mark("health with an unreachable node failed by name");
  }, 8 * MIN);
});

function inCidr(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split("/");
  const n = (a: string) => a.split(".").reduce((acc, o) => acc * 256 + Number(o), 0);
  const mask = 2 ** 32 - 2 ** (32 - Number(bits));
  return (n(ip) & mask) >>> 0 === (n(base) & mask) >>> 0;
}
