/**
 * The Node controllers on the real in-memory store and runtime: NodeLabelSpec/NodeAnnotationSpec/NodeTaintSpec
 * from the machine config, NodeCordonedSpec from the machine stage, and k8s.NodeApplyController writing them to a
 * Node in the in-memory Kubernetes API (FakeKubernetes) with the admin kubeconfig on a control plane and the
 * kubelet's kubeconfig file on a worker.
 */
import { describe, expect, it } from "vitest";
import { MemoryFiles } from "../../../src/host/files/index.js";
import { KubeApiError } from "../../../src/host/kube/api.js";
import { nodeAnnotationSpecController } from "../../../src/controllers/k8s/node-annotation-spec.js";
import { nodeApplyController, type NodeApplyOptions } from "../../../src/controllers/k8s/node-apply.js";
import { nodeCordonedSpecController } from "../../../src/controllers/k8s/node-cordoned-spec.js";
import { nodeLabelSpecController } from "../../../src/controllers/k8s/node-label-spec.js";
import { nodeTaintSpecController } from "../../../src/controllers/k8s/node-taint-spec.js";
import { kubernetesStatusControllers } from "../../../src/controllers/k8s/status-controllers.js";
import type { KubeObject, NodeObject } from "../../../src/machinery/kubernetes/objects.js";
import { readAll } from "../../../src/machinery/resources/read.js";
import {
  K8S_NS,
  KubeletConfigType,
  NodeAnnotationSpecType,
  NodeCordonedSpecType,
  NodeLabelSpecType,
  NodenameType,
  NodeStatusType,
  NodeTaintSpecType,
} from "../../../src/machinery/resources/types/k8s.js";
import { MachineStatusType, RUNTIME_NS } from "../../../src/machinery/resources/types/runtime.js";
import { KubernetesCertsType, SECRETS_NS } from "../../../src/machinery/resources/types/secrets.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { FakeKubernetes } from "../../helpers/fake-kubernetes.js";
import { controlPlaneConfig, eventually, publishConfig, put, settle, sleep, startRuntime } from "../runtime/harness.js";

const WAIT = 5_000;
const CP = "node-role.kubernetes.io/control-plane";

const NODE_EXTRA = `  nodeLabels:
    zone: a
    node.kubernetes.io/exclude-from-external-load-balancers: ""
  nodeAnnotations:
    example.com/owner: team-a
  nodeTaints:
    dedicated: infra:NoSchedule
    gpu: NoExecute`;

const specs = () => [nodeLabelSpecController(), nodeAnnotationSpecController(), nodeTaintSpecController()];

const kv = (s: InMemoryState, type: typeof NodeLabelSpecType) => Object.fromEntries(readAll(s, type).map((r) => [r.metadata.id, r.spec.value]));
const taints = (s: InMemoryState) => Object.fromEntries(readAll(s, NodeTaintSpecType).map((r) => [r.metadata.id, r.spec]));

describe("Node spec controllers", () => {
  it("derive labels, annotations and taints from the machine config, with the control plane's own", async () => {
    const s = new InMemoryState();
    startRuntime(s, specs());
    publishConfig(s, controlPlaneConfig({ machineExtra: NODE_EXTRA }));
    await eventually(() => readAll(s, NodeTaintSpecType).length === 3, WAIT, "taint specs");
    expect(kv(s, NodeLabelSpecType)).toEqual({ zone: "a", "node.kubernetes.io/exclude-from-external-load-balancers": "", [CP]: "" });
    expect(kv(s, NodeAnnotationSpecType)).toEqual({ "example.com/owner": "team-a" });
    expect(taints(s)).toEqual({
      [CP]: { key: CP, value: "", effect: "NoSchedule" },
      dedicated: { key: "dedicated", value: "infra", effect: "NoSchedule" },
      gpu: { key: "gpu", value: "", effect: "NoExecute" },
    });

    // Scheduling allowed and the config trimmed: what is no longer wanted goes.
    publishConfig(s, controlPlaneConfig({ machineExtra: "  nodeLabels:\n    zone: b", clusterExtra: "  allowSchedulingOnControlPlanes: true\n" }));
    await eventually(() => readAll(s, NodeTaintSpecType).length === 0, WAIT, "taints gone");
    expect(kv(s, NodeLabelSpecType)).toEqual({ zone: "b", [CP]: "" });
    expect(kv(s, NodeAnnotationSpecType)).toEqual({});
  });

  it("give a worker neither the control-plane label nor its taint", async () => {
    const s = new InMemoryState();
    startRuntime(s, specs());
    publishConfig(s, controlPlaneConfig({ type: "worker", machineExtra: NODE_EXTRA }));
    await eventually(() => readAll(s, NodeTaintSpecType).length === 2, WAIT, "taint specs");
    expect(Object.keys(kv(s, NodeLabelSpecType)).sort()).toEqual(["node.kubernetes.io/exclude-from-external-load-balancers", "zone"]);
    expect(Object.keys(taints(s)).sort()).toEqual(["dedicated", "gpu"]);
  });

  it("want the node cordoned while shutting down, upgrading or resetting, and no longer once running", async () => {
    const s = new InMemoryState();
    startRuntime(s, [nodeCordonedSpecController()]);
    const stage = (st: string) => put(s, RUNTIME_NS, MachineStatusType.type, "machine", { stage: st, status: { ready: false, unmetConditions: [] } });
    const cordoned = () => readAll(s, NodeCordonedSpecType).map((r) => r.metadata.id);
    stage("running");
    await settle();
    expect(cordoned()).toEqual([]);
    stage("upgrading");
    await eventually(() => cordoned().length === 1, WAIT, "cordoned");
    expect(cordoned()).toEqual(["cordoned"]);
    // Rebooting (after the upgrade) changes nothing; booting again uncordons.
    stage("rebooting");
    await settle();
    expect(cordoned()).toEqual(["cordoned"]);
    stage("booting");
    await eventually(() => cordoned().length === 0, WAIT, "uncordoned");
  });
});

interface Cluster {
  s: InMemoryState;
  k8s: FakeKubernetes;
  kubeconfigs: string[];
  rt: ReturnType<typeof startRuntime>;
  node(): NodeObject;
}

/** A node with its Node object already registered by the kubelet (its labels, the taint it registered with). */
function cluster(
  opts: { type?: string; machineExtra?: string; files?: MemoryFiles; apply?: Partial<NodeApplyOptions>; registered?: boolean; kubelet?: boolean; skipNodeRegistration?: boolean } = {},
): Cluster {
  const s = new InMemoryState();
  const k8s = new FakeKubernetes();
  if (opts.registered !== false) {
    k8s.put({
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: "node-1", labels: { "kubernetes.io/hostname": "node-1", "kubernetes.io/os": "linux" }, annotations: { "node.alpha.kubernetes.io/ttl": "0" } },
      spec: { podCIDRs: ["10.244.0.0/24"], ...(opts.type === "worker" ? {} : { taints: [{ key: CP, effect: "NoSchedule" }] }) },
    });
  }
  const kubeconfigs: string[] = [];
  const rt = startRuntime(s, [
    ...specs(),
    nodeCordonedSpecController(),
    nodeApplyController({
      files: opts.files ?? new MemoryFiles(),
      pollMs: 20,
      retryForMs: 300,
      connect: (kc) => {
        kubeconfigs.push(kc);
        return k8s.client();
      },
      ...opts.apply,
    }),
  ]);
  put(s, K8S_NS, NodenameType.type, "nodename", { nodename: "node-1", hostnameVersion: "1", skipNodeRegistration: opts.skipNodeRegistration ?? false }, "k8s.NodenameController");
  if (opts.kubelet !== false) put(s, K8S_NS, KubeletConfigType.type, "kubelet", { image: "kubelet" }, "k8s.KubeletConfigController");
  put(s, SECRETS_NS, KubernetesCertsType.type, "k8s-certs", { localhostAdminKubeconfig: "ADMIN KUBECONFIG", adminKubeconfig: "", schedulerKubeconfig: "", controllerManagerKubeconfig: "" }, "secrets.KubernetesCertsController");
  publishConfig(s, controlPlaneConfig({ type: opts.type, machineExtra: opts.machineExtra ?? NODE_EXTRA }));
  return { s, k8s, kubeconfigs, rt, node: () => k8s.getObject("v1", "Node", "node-1") as NodeObject };
}

const owned = (n: NodeObject, what: string) => JSON.parse(n.metadata?.annotations?.[`talos.dev/owned-${what}`] ?? "[]") as string[];

describe("k8s.NodeApplyController", () => {
  it("applies labels, annotations and taints to the Node on a control plane with the admin kubeconfig, and owns them", async () => {
    const c = cluster();
    await eventually(() => owned(c.node(), "taints").length === 3, WAIT, "node applied");
    const n = c.node();
    expect(c.kubeconfigs.every((k) => k === "ADMIN KUBECONFIG")).toBe(true);
    expect(n.metadata?.labels).toEqual({
      "kubernetes.io/hostname": "node-1",
      "kubernetes.io/os": "linux",
      zone: "a",
      "node.kubernetes.io/exclude-from-external-load-balancers": "",
      [CP]: "",
    });
    expect(owned(n, "labels")).toEqual([CP, "node.kubernetes.io/exclude-from-external-load-balancers", "zone"]);
    expect(n.metadata?.annotations).toMatchObject({ "node.alpha.kubernetes.io/ttl": "0", "example.com/owner": "team-a" });
    expect(owned(n, "annotations")).toEqual(["example.com/owner"]);
    // The taint the kubelet registered with is taken over, not duplicated.
    expect(n.spec?.taints).toEqual([
      { key: CP, effect: "NoSchedule" },
      { key: "dedicated", value: "infra", effect: "NoSchedule" },
      { key: "gpu", effect: "NoExecute" },
    ]);
    expect(owned(n, "taints")).toEqual(["dedicated", "gpu", CP]);
    expect(n.spec?.podCIDRs).toEqual(["10.244.0.0/24"]);
    expect(c.k8s.clientsClosed).toBe(c.k8s.clientsOpened);

    // Config trimmed: what Talos owned and no longer wants is removed, the kubelet's labels stay.
    publishConfig(c.s, controlPlaneConfig({ machineExtra: "  nodeLabels:\n    zone: b", clusterExtra: "  allowSchedulingOnControlPlanes: true\n" }));
    await eventually(() => c.node().spec?.taints === undefined, WAIT, "taints removed");
    const m = c.node();
    expect(m.metadata?.labels).toEqual({ "kubernetes.io/hostname": "node-1", "kubernetes.io/os": "linux", zone: "b", [CP]: "" });
    expect(m.metadata?.annotations).toEqual({ "node.alpha.kubernetes.io/ttl": "0", "talos.dev/owned-labels": JSON.stringify([CP, "zone"]) });
  });

  it("never touches what it does not own, and puts back what was removed by hand once the Node status says so", async () => {
    const c = cluster({ machineExtra: "  nodeLabels:\n    zone: a\n    team: ours" });
    await eventually(() => owned(c.node(), "labels").length === 3, WAIT, "applied");
    // Someone else sets `team` to their value and removes `zone`.
    const n = c.node();
    n.metadata!.labels = { ...n.metadata!.labels, team: "theirs" };
    delete n.metadata!.labels.zone;
    c.k8s.put(n as KubeObject);
    // ...but `team` was owned: Talos puts its value back, as upstream does for owned keys.
    put(c.s, K8S_NS, NodeStatusType.type, "node-1", { nodename: "node-1", nodeReady: true, unschedulable: false, labels: n.metadata!.labels, annotations: {}, podCIDRs: [] }, "k8s.NodeStatusController");
    await eventually(() => c.node().metadata?.labels?.zone === "a", WAIT, "zone back");
    expect(c.node().metadata?.labels?.team).toBe("ours");

    // A label Talos never owned, with another value than wanted, is left alone and not claimed.
    const c2 = cluster({ machineExtra: "  nodeLabels:\n    zone: a" });
    const n2 = c2.node();
    n2.metadata!.labels = { ...n2.metadata!.labels, zone: "manual" };
    c2.k8s.put(n2 as KubeObject);
    await eventually(() => owned(c2.node(), "labels").includes(CP), WAIT, "applied");
    expect(c2.node().metadata?.labels?.zone).toBe("manual");
    expect(owned(c2.node(), "labels")).toEqual([CP]);
  });

  it("cordons the Node while a NodeCordonedSpec exists and uncordons it after", async () => {
    const c = cluster();
    const stage = (st: string) => put(c.s, RUNTIME_NS, MachineStatusType.type, "machine", { stage: st, status: { ready: false, unmetConditions: [] } });
    stage("running");
    await eventually(() => owned(c.node(), "labels").length > 0, WAIT, "applied");
    expect(c.node().spec?.unschedulable).toBeUndefined();
    stage("shutting down");
    await eventually(() => c.node().spec?.unschedulable === true, WAIT, "cordoned");
    expect(c.node().metadata?.annotations?.["talos.dev/cordoned"]).toBe("true");
    stage("booting");
    await eventually(() => c.node().spec?.unschedulable === undefined, WAIT, "uncordoned");
    expect(c.node().metadata?.annotations?.["talos.dev/cordoned"]).toBeUndefined();
  });

  it("on a worker uses the kubelet kubeconfig file (inlined) once it exists", async () => {
    const files = new MemoryFiles();
    const c = cluster({ type: "worker", files });
    await sleep(100);
    expect(c.kubeconfigs).toEqual([]);
    files
      .addFile(
        "/etc/kubernetes/kubeconfig-kubelet",
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:7445'}}]\nusers: [{name: u, user: {client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem, client-key: /var/lib/kubelet/pki/kubelet-client-current.pem}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
      )
      .addFile("/var/lib/kubelet/pki/kubelet-client-current.pem", "PEM");
    await eventually(() => owned(c.node(), "taints").length === 2, WAIT, "applied with the kubelet's identity");
    expect(c.kubeconfigs[0]).toContain("client-certificate-data");
    expect(c.node().metadata?.labels?.[CP]).toBeUndefined();
  });

  it("waits for the Node to be registered, then applies", async () => {
    const c = cluster({ registered: false });
    await eventually(() => c.kubeconfigs.length >= 2, WAIT, "looking for the node");
    expect(c.rt.status("k8s.NodeApplyController")?.consecutiveFailures ?? 0).toBe(0);
    c.k8s.put({ apiVersion: "v1", kind: "Node", metadata: { name: "node-1" } });
    await eventually(() => owned(c.node(), "labels").includes(CP), WAIT, "applied");
  });

  it("retries a write that lost a race (409) with a fresh read; a lasting Forbidden fails the reconcile, named", async () => {
    const c = cluster({ registered: true });
    let raced = false;
    c.k8s.beforeUpdate = (obj) => {
      if (raced) return;
      raced = true;
      // A concurrent writer (the kubelet's heartbeat) between our read and our write.
      const cur = c.node();
      c.k8s.put({ ...cur, metadata: { ...cur.metadata, annotations: { ...cur.metadata?.annotations, heartbeat: "1" } } } as KubeObject);
      expect(obj.metadata?.resourceVersion).not.toBe(c.node().metadata?.resourceVersion);
    };
    await eventually(() => owned(c.node(), "labels").includes(CP), WAIT, "applied after the conflict");
    expect(raced).toBe(true);
    expect(c.node().metadata?.annotations?.heartbeat).toBe("1");
    expect(c.k8s.calls.filter((x) => x.verb === "update").length).toBeGreaterThanOrEqual(1);

    const d = cluster();
    d.k8s.beforeUpdate = () => {
      throw new KubeApiError(403, "Forbidden", 'nodes "node-1" is forbidden: User "system:node:node-1" cannot update resource "nodes"');
    };
    await eventually(() => (d.rt.status("k8s.NodeApplyController")?.consecutiveFailures ?? 0) > 0, WAIT, "failure");
    expect(d.rt.status("k8s.NodeApplyController")?.lastError).toMatch(/^error syncing node node-1: .*forbidden/);
    expect(d.k8s.calls.filter((x) => x.verb === "update").length).toBeGreaterThan(1);
  });

  it("does nothing without a kubelet, or when the node skips registration", async () => {
    const c = cluster({ kubelet: false });
    const d = cluster({ skipNodeRegistration: true });
    for (const x of [c, d]) put(x.s, K8S_NS, NodeStatusType.type, "node-1", { nodename: "node-1", nodeReady: true, unschedulable: false, labels: {}, annotations: {}, podCIDRs: [] });
    await sleep(200);
    expect([c.kubeconfigs, d.kubeconfigs]).toEqual([[], []]);
    expect(c.node().metadata?.annotations).toEqual({ "node.alpha.kubernetes.io/ttl": "0" });
    // The same node with a kubelet does apply (the test above would pass for a controller that never runs).
    put(c.s, K8S_NS, KubeletConfigType.type, "kubelet", { image: "kubelet" }, "k8s.KubeletConfigController");
    await eventually(() => owned(c.node(), "labels").includes(CP), WAIT, "applied");
  });

  it("is part of the status controller list", () => {
    const names = kubernetesStatusControllers().map((x) => x.name);
    expect(names).toEqual(expect.arrayContaining(["k8s.NodeApplyController", "k8s.NodeLabelSpecController", "k8s.NodeTaintSpecController", "k8s.NodeAnnotationSpecController", "k8s.NodeCordonedSpecController"]));
  });
});
