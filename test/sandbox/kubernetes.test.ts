/**
 * One node becomes a Kubernetes node, end to end, and its Kubernetes is upgraded in place: a sandboxed control plane
 * (test/helpers/sandbox.ts: its own network, mount and UTS namespaces; CRI containerd, runc, etcd, the kubelet and the
 * control plane from their upstream image references, pulled through the loopback registry that stands in for
 * registry.k8s.io, ghcr.io and docker.io) configured over the real API with a generated config (scheduling allowed on
 * the control plane). Bootstrap once → the node Ready → every kube-system pod Running → the server-side health check
 * passes with no check skipped → a Deployment runs and its logs are read through the Kubernetes API → the images are
 * moved from Kubernetes 1.36 to 1.37 by a machine-config change (what `talosctl upgrade-k8s` does on the node) → the
 * API server, the static pods and the kubelet report 1.37, the node is Ready again and the Deployment kept running.
 *
 * Needs root, dist/ (npm run build) and the images in the loopback registry (make kube-images && make registry);
 * skips saying which is missing.
 */
import * as k8s from "@kubernetes/client-node";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { applyPatches, parsePatch } from "../../src/machinery/config/patch/index.js";
import { generateConfigs } from "../../src/machinery/generate/index.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { MachineService, ApplyConfigurationRequest_Mode as Mode } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as c from "../../src/machinery/api/gen/cluster/cluster_pb.js";
import { ClusterService } from "../../src/machinery/api/gen/cluster/cluster_pb.js";
import { DataSchema } from "../../src/machinery/api/gen/common/common_pb.js";
import { tlsKeyPem } from "../../src/machinery/pki/pem.js";
import { TestClient, insecureTls, mtls } from "../helpers/client.js";
import { mirrorsPatch, sandboxSkipReason, startLab, startSandbox, type Lab, type SandboxNode, until, untarOne } from "../helpers/sandbox.js";

const FROM = "1.36.3";
const TO = "1.37.2";
const IMAGES = ["siderolabs/kubelet", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "coredns/coredns", "siderolabs/flannel", "pause", "library/busybox"];

async function imagesSkipReason(): Promise<string | undefined> {
  const base = await sandboxSkipReason({ images: IMAGES });
  if (base) return base;
  for (const repo of ["siderolabs/kubelet", "kube-apiserver"]) {
    const tags = (await fetch(`http://127.0.0.1:5000/v2/${repo}/tags/list`).then((r) => r.json())) as { tags?: string[] };
    for (const v of [FROM, TO]) if (!tags.tags?.includes(`v${v}`)) return `${repo}:v${v} is not in the loopback registry (make kube-images && make registry)`;
  }
  return undefined;
}

const skip = await imagesSkipReason();
if (skip) console.log(`skipping the Kubernetes end-to-end test: ${skip}`);

const MIN = 60_000;

const imageTag = (image: string | undefined) => image?.split(":").pop();

describe.skipIf(!!skip)("a sandboxed node becomes a Kubernetes node and is upgraded", () => {
  let lab: Lab;
  let node: SandboxNode;
  let admin: TestClient;
  let config: string;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  const t0 = Date.now();
  const figures: Record<string, number> = {};
  const mark = (what: string) => {
    figures[what] = Math.round((Date.now() - t0) / 1000);
    console.log(`[kubernetes e2e +${figures[what]}s] ${what}`);
  };

  const apply = async (cfg: string, client: TestClient, mode = Mode.AUTO) =>
    client.unary(MachineService, "ApplyConfiguration", m.ApplyConfigurationRequestSchema, m.ApplyConfigurationResponseSchema, { data: new TextEncoder().encode(cfg), mode }, { deadlineMs: 2 * MIN });

  const diagnostics = async () => {
    const out: string[] = [];
    const services = await admin.unary(MachineService, "ServiceList", EmptySchema, m.ServiceListResponseSchema, {}, { deadlineMs: 20_000 }).catch(() => undefined);
    for (const s of services?.messages[0].services ?? []) out.push(`${s.id}: ${s.state} ${s.health?.lastMessage ?? ""} | ${s.events?.events.slice(-2).map((e) => e.msg).join(" | ")}`);
    const pods = await core?.listNamespacedPod({ namespace: "kube-system" }).catch(() => undefined);
    for (const p of pods?.items ?? []) out.push(`pod ${p.metadata?.name}: ${p.status?.phase} ${(p.status?.containerStatuses ?? []).map((s) => JSON.stringify(s.state)).join(" ")}`);
    out.push(node.log().split("\n").slice(-30).join("\n"));
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
    lab = await startLab("k8s", "10.214.71");
    const ip = lab.address(2).split("/")[0];
    const cfgs = await generateConfigs({ clusterName: "k8s-e2e", endpoint: `https://${ip}:6443`, installDisk: "/dev/vda", talosVersion: "v1.13", kubernetesVersion: FROM });
    const ctx = (parse(cfgs.talosconfig) as { contexts: Record<string, { ca: string; crt: string; key: string }> }).contexts["k8s-e2e"];
    const d = (s: string) => Buffer.from(s, "base64").toString("utf8");
    config = applyPatches(cfgs.controlplane, [
      parsePatch(mirrorsPatch(lab.gateway)),
      parsePatch("machine:\n  network:\n    hostname: k8s-cp\ncluster:\n  allowSchedulingOnControlPlanes: true\n"),
    ]);
    node = await startSandbox(lab, "k8s-cp", 2);
    mark("sandbox up (maintenance)");
    const insecure = new TestClient(`${ip}:50000`, insecureTls());
    try {
      await apply(config, insecure);
    } finally {
      insecure.close();
    }
    admin = new TestClient(`${ip}:50000`, mtls(d(ctx.ca), d(ctx.crt), tlsKeyPem(d(ctx.key))));
    await until("the API with the cluster's credentials", 2 * MIN, () => admin.unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {}, { deadlineMs: 10_000 }));
    mark("config applied");
  }, 5 * MIN);

  afterAll(async () => {
    console.log(`kubernetes e2e figures (s since start): ${JSON.stringify(figures)}`);
    admin?.close();
    await node?.stop();
    await lab?.stop();
  }, 3 * MIN);

  it("bootstraps once; the node is Ready with every kube-system pod Running", async () => {
    await until("etcd ready for bootstrap", 3 * MIN, () => admin.unary(MachineService, "Bootstrap", m.BootstrapRequestSchema, m.BootstrapResponseSchema, {}, { deadlineMs: 20_000 }));
    mark("bootstrapped");
    const chunks: Uint8Array[] = [];
    await until("a kubeconfig", MIN, async () => {
      const r = await admin.stream(MachineService, "Kubeconfig", EmptySchema, DataSchema, {}, { deadlineMs: 20_000 });
      chunks.splice(0, chunks.length, ...r.map((x) => x.bytes));
    });
    kc = new k8s.KubeConfig();
    kc.loadFromString(untarOne(Buffer.concat(chunks), "kubeconfig"));
    expect(kc.getCurrentCluster()?.server).toBe(`https://${node.ip}:6443`);
    core = kc.makeApiClient(k8s.CoreV1Api);

    await explained(
      until("the node Ready", 10 * MIN, async () => {
        const n = await core.readNode({ name: "k8s-cp" });
        const ready = n.status?.conditions?.find((x) => x.type === "Ready");
        expect(ready?.status, `Ready condition: ${ready?.message}`).toBe("True");
        expect(n.status?.nodeInfo?.kubeletVersion).toBe(`v${FROM}`);
      }),
    );
    mark("node Ready");
    await explained(
      until("every kube-system pod Running and ready", 8 * MIN, async () => {
        const pods = (await core.listNamespacedPod({ namespace: "kube-system" })).items;
        const prefixes = ["kube-apiserver-k8s-cp", "kube-controller-manager-k8s-cp", "kube-scheduler-k8s-cp", "kube-proxy-", "kube-flannel-", "coredns-"];
        for (const p of prefixes) expect(pods.some((x) => x.metadata?.name?.startsWith(p)), `a pod ${p}*`).toBe(true);
        for (const p of pods) {
          expect(p.status?.phase, `${p.metadata?.name}`).toBe("Running");
          expect(p.status?.containerStatuses?.every((s) => s.ready), `${p.metadata?.name} containers ready`).toBe(true);
        }
      }),
    );
    mark("kube-system Running");
  }, 25 * MIN);

  it("passes the server-side health check with nothing skipped", async () => {
    const lines: string[] = [];
    await explained(
      admin.stream(ClusterService, "HealthCheck", c.HealthCheckRequestSchema, c.HealthCheckProgressSchema, { waitTimeout: { seconds: BigInt(5 * 60), nanos: 0 } }, {
        deadlineMs: 6 * MIN,
        onMessage: (x) => lines.push(x.message),
      }),
    );
    mark("health passed");
    expect(lines[0]).toMatch(/^discovered nodes: /);
    expect(lines.join("\n")).not.toMatch(/SKIP/);
    for (const check of ["etcd to be healthy", "kubelet to be healthy", "all k8s nodes to report ready", "all control plane static pods to be running", "all control plane components to be ready", "kube-proxy to report ready", "coredns to report ready"]) {
      expect(lines.some((l) => l.startsWith(`waiting for ${check}: OK`)), `${check} OK in\n${lines.join("\n")}`).toBe(true);
    }
  }, 7 * MIN);

  it("runs a Deployment and serves its logs through the Kubernetes API", async () => {
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    await apps.createNamespacedDeployment({
      namespace: "default",
      body: {
        metadata: { name: "hello" },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: "hello" } },
          template: {
            metadata: { labels: { app: "hello" } },
            spec: { containers: [{ name: "hello", image: "docker.io/library/busybox:1.37", command: ["sh", "-c", "while true; do echo hello from $(hostname); sleep 2; done"] }] },
          },
        },
      },
    });
    const pod = await explained(
      until("the Deployment's pod Running", 5 * MIN, async () => {
        const p = (await core.listNamespacedPod({ namespace: "default", labelSelector: "app=hello" })).items[0];
        expect(p?.status?.phase).toBe("Running");
        return p.metadata!.name!;
      }),
    );
    const log = await until("the pod's log", 2 * MIN, async () => {
      const text = await core.readNamespacedPodLog({ name: pod, namespace: "default" });
      expect(text).toContain(`hello from ${pod}`);
      return text;
    });
    expect(log.split("\n")[0]).toBe(`hello from ${pod}`);
    mark("Deployment running, logs read");
  }, 8 * MIN);

  it(`moves Kubernetes from ${FROM} to ${TO} by a config change; the node and the Deployment stay up`, async () => {
    const before = (await core.listNamespacedPod({ namespace: "default", labelSelector: "app=hello" })).items[0];
    const tag = `v${TO}`;
    const upgraded = applyPatches(config, [
      parsePatch(
        [
          "machine:",
          "  kubelet:",
          `    image: ghcr.io/siderolabs/kubelet:${tag}`,
          "cluster:",
          "  apiServer:",
          `    image: registry.k8s.io/kube-apiserver:${tag}`,
          "  controllerManager:",
          `    image: registry.k8s.io/kube-controller-manager:${tag}`,
          "  scheduler:",
          `    image: registry.k8s.io/kube-scheduler:${tag}`,
          "",
        ].join("\n"),
      ),
    ]);
    const r = await apply(upgraded, admin, Mode.NO_REBOOT);
    expect(r.messages[0].mode).toBe(Mode.NO_REBOOT);
    mark("upgrade applied");

    const version = kc.makeApiClient(k8s.VersionApi);
    await explained(until("the API server at the new version", 10 * MIN, async () => expect((await version.getCode()).gitVersion).toBe(tag)));
    mark("API server upgraded");
    await explained(
      until("the static pods and the kubelet at the new version, the node Ready", 10 * MIN, async () => {
        const pods = (await core.listNamespacedPod({ namespace: "kube-system" })).items;
        for (const component of ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]) {
          const p = pods.find((x) => x.metadata?.name === `${component}-k8s-cp`);
          expect(imageTag(p?.spec?.containers[0].image), `${component} image`).toBe(tag);
          expect(p?.status?.containerStatuses?.every((s) => s.ready), `${component} ready`).toBe(true);
        }
        const n = await core.readNode({ name: "k8s-cp" });
        expect(n.status?.nodeInfo?.kubeletVersion).toBe(tag);
        expect(n.status?.conditions?.find((x) => x.type === "Ready")?.status).toBe("True");
      }),
    );
    mark("static pods and kubelet upgraded");
    // The workload is untouched by the control plane's move: same pod, still running, still logging.
    const after = await core.readNamespacedPod({ name: before.metadata!.name!, namespace: "default" });
    expect(after.metadata?.uid).toBe(before.metadata?.uid);
    expect(after.status?.phase).toBe("Running");
    await until("fresh log lines", MIN, async () => expect(await core.readNamespacedPodLog({ name: after.metadata!.name!, namespace: "default", sinceSeconds: 10 })).toContain("hello from"));
    // The node's own view agrees: the kubelet service runs the new image.
    const kubelet = await admin.unary(MachineService, "ServiceList", EmptySchema, m.ServiceListResponseSchema, {});
    expect(kubelet.messages[0].services.find((s) => s.id === "kubelet")?.state).toBe("Running");
  }, 25 * MIN);
});
