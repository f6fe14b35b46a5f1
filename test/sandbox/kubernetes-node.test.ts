/**
 * One sandboxed control plane, bootstrapped, with Kubernetes up: the Node object as upstream manages it (the
 * control-plane role label and NoSchedule taint, the machine config's labels and taints, ownership annotations,
 * OS-IMAGE Talos) and the Kubernetes-facing node APIs over the real API (`containers -k` lists the kube-apiserver
 * container through the CRI, `logs -k` returns its CRI log lines). Needs root, the built agent and the component
 * images in the loopback registry (sandboxSkipReason says what is missing).
 */
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { ContainerDriver, DataSchema } from "../../src/machinery/api/gen/common/common_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { MachineService } from "../../src/machinery/api/gen/machine/machine_pb.js";
import { applyPatches, parsePatch } from "../../src/machinery/config/patch/index.js";
import { generateConfigs, type GeneratedConfigs } from "../../src/machinery/generate/index.js";
import { kubeApi, type KubeApi } from "../../src/host/kube/api.js";
import { NODES, type NodeObject } from "../../src/machinery/kubernetes/objects.js";
import { TestClient, insecureTls, mtls } from "../helpers/client.js";
import { mirrorsPatch, sandboxSkipReason, startLab, startSandbox, type Lab, type SandboxNode } from "../helpers/sandbox.js";
import { talosconfigCreds } from "../api/harness.js";

const IMAGES = ["siderolabs/kubelet", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "pause"];
const skip = await sandboxSkipReason({ images: IMAGES });
if (skip) console.log(`skipping the sandboxed Kubernetes node test: ${skip}`);

const CP = "node-role.kubernetes.io/control-plane";

async function until<T>(what: string, timeoutMs: number, f: () => Promise<T | undefined>, log: () => string): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await f();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ""}\n${log().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 2000));
  }
}

describe.skipIf(!!skip)("a sandboxed control plane's Node and CRI APIs", () => {
  let lab: Lab;
  let node: SandboxNode;
  let cfgs: GeneratedConfigs;
  let admin: TestClient;
  let kube: KubeApi;
  let apiNode: NodeObject;

  beforeAll(async () => {
    lab = await startLab("nodeapply", "10.214.47");
    node = await startSandbox(lab, "cp", 2);
    cfgs = await generateConfigs({ clusterName: "node-e2e", endpoint: `https://${node.ip}:6443`, talosVersion: "v1.13" });
    const config = applyPatches(cfgs.controlplane, [
      parsePatch(mirrorsPatch(lab.gateway)),
      parsePatch("machine:\n  nodeLabels:\n    example.com/zone: z1\n  nodeTaints:\n    example.com/dedicated: infra:PreferNoSchedule\n"),
    ]);
    const insecure = new TestClient(`${node.ip}:50000`, insecureTls());
    await insecure.unary(MachineService, "ApplyConfiguration", m.ApplyConfigurationRequestSchema, m.ApplyConfigurationResponseSchema, {
      data: new TextEncoder().encode(config),
      mode: m.ApplyConfigurationRequest_Mode.AUTO,
    });
    insecure.close();
    const creds = talosconfigCreds(cfgs.talosconfig);
    admin = new TestClient(`${node.ip}:50000`, mtls(creds.ca, creds.crt, creds.key));
    // Bootstrap is refused until etcd is there to be bootstrapped.
    await until("bootstrap", 120_000, async () => (await admin.unary(MachineService, "Bootstrap", m.BootstrapRequestSchema, m.BootstrapResponseSchema, {}), true), node.log);
    const chunks = await until("kubeconfig", 60_000, () => admin.stream(MachineService, "Kubeconfig", EmptySchema, DataSchema, {}), node.log);
    const tar = gunzipSync(Buffer.concat(chunks.map((c) => c.bytes)));
    const size = parseInt(tar.subarray(124, 136).toString(), 8);
    kube = kubeApi(tar.subarray(512, 512 + size).toString());
    // The kubelet registers, then NodeApplyController takes the registered taint over and adds the label.
    apiNode = await until(
      "the Node with the control-plane label",
      240_000,
      async () => {
        const n = (await kube.list<NodeObject>(NODES)).items[0];
        return n?.metadata?.labels?.[CP] === "" && n.metadata.annotations?.["talos.dev/owned-taints"] ? n : undefined;
      },
      node.log,
    );
  }, 420_000);

  afterAll(async () => {
    admin?.close();
    await kube?.close();
    await node?.stop();
    await lab?.stop();
  }, 120_000);

  it("shows the control-plane role and NoSchedule taint, the config's labels and taints, owned by Talos", () => {
    const labels = apiNode.metadata?.labels ?? {};
    expect(labels).toMatchObject({ [CP]: "", "example.com/zone": "z1", "node.kubernetes.io/exclude-from-external-load-balancers": "" });
    const taints = (apiNode.spec?.taints as { key: string; value?: string; effect: string }[]).filter((t) => t.key !== "node.kubernetes.io/not-ready");
    expect(taints).toEqual(
      expect.arrayContaining([
        { key: CP, effect: "NoSchedule" },
        { key: "example.com/dedicated", value: "infra", effect: "PreferNoSchedule" },
      ]),
    );
    const owned = (k: string) => JSON.parse(apiNode.metadata?.annotations?.[`talos.dev/owned-${k}`] ?? "[]") as string[];
    expect(owned("labels")).toEqual(expect.arrayContaining([CP, "example.com/zone"]));
    expect(owned("taints")).toEqual(["example.com/dedicated", CP]);
    // The kubelet's own labels are not Talos's.
    expect(owned("labels")).not.toContain("kubernetes.io/hostname");
  });

  it("reports Talos as the node's OS image", () => {
    const info = (apiNode.status as { nodeInfo?: { osImage?: string } }).nodeInfo;
    expect(info?.osImage).toMatch(/^Talos \(v\d+\.\d+\.\d+\)$/);
  });

  it("lists the kube-apiserver container through the CRI, and serves its log", async () => {
    const name = apiNode.metadata!.name!;
    const res = await admin.unary(MachineService, "Containers", m.ContainersRequestSchema, m.ContainersResponseSchema, { namespace: "k8s.io", driver: ContainerDriver.CRI });
    const rows = res.messages[0].containers;
    const pod = `kube-system/kube-apiserver-${name}`;
    expect(rows.find((c) => c.id === pod)).toMatchObject({ podId: pod, status: "SANDBOX_READY" });
    const apiserver = rows.find((c) => c.podId === pod && c.name === "kube-apiserver" && c.status === "CONTAINER_RUNNING");
    expect(apiserver?.id).toMatch(new RegExp(`^${pod}:kube-apiserver:[0-9a-f]{12}$`));
    expect(apiserver?.image).toMatch(/kube-apiserver:v/);
    expect(apiserver?.pid).toBeGreaterThan(0);

    const chunks = await admin.stream(MachineService, "Logs", m.LogsRequestSchema, DataSchema, {
      namespace: "k8s.io",
      driver: ContainerDriver.CRI,
      id: `${pod}:kube-apiserver`,
      tailLines: 5,
    });
    const lines = Buffer.concat(chunks.map((c) => c.bytes)).toString().trimEnd().split("\n");
    expect(lines).toHaveLength(5);
    for (const l of lines) expect(l).toMatch(/^\d{4}-\d\d-\d\dT\S+ (stdout|stderr) [PF] /);
  });
});
