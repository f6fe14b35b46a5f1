/**
 * Cluster discovery controllers with the real store and runtime: DiscoveryConfig from both config layouts, the
 * local affiliate, the Kubernetes registry (pull over MemoryKubeApi, push through the KubernetesClient fake), the
 * merge, Members, the `discovery` endpoints, and two nodes that find each other through one in-memory cluster.
 * The Kubernetes API is an in-memory stand-in here; the sandbox test (test/multinode/members.test.ts) runs the
 * real one.
 */
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { MemoryFiles } from "../../../src/host/files/index.js";
import type { KubeApi, KubeApiFactory, ListOptions, WatchEvent, WatchOptions } from "../../../src/host/kube/api.js";
import { MemoryKubeApi } from "../../../src/host/kube/memory.js";
import { nodeAnnotatorFromClient, withAnnotations, type NodeAnnotator, type NodeAnnotatorFactory } from "../../../src/host/kube/node-annotations.js";
import { generateConfigs } from "../../../src/machinery/generate/index.js";
import { NODES, type KubeKind, type KubeObject, type NodeObject } from "../../../src/machinery/kubernetes/objects.js";
import { specYaml } from "../../../src/machinery/resources/render.js";
import { affiliateFromNode, annotationsFromAffiliate, mergeAffiliate } from "../../../src/machinery/resources/types/cluster-affiliate.js";
import { CLUSTER_NS, IdentityType, MemberType, type MemberSpec } from "../../../src/machinery/resources/types/cluster.js";
import { AffiliateType, CLUSTER_RAW_NS, DiscoveryConfigType, type AffiliateSpec, type DiscoveryConfigSpec } from "../../../src/machinery/resources/types/discovery.js";
import { CONTROLPLANE_NS, EndpointType } from "../../../src/machinery/resources/types/k8s-status.js";
import { K8S_NS, KubeletConfigType, NodenameType } from "../../../src/machinery/resources/types/k8s.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { ControllerRuntime } from "../../../src/state/runtime/index.js";
import { affiliateMergeController } from "../../../src/controllers/cluster/affiliate-merge.js";
import { discoveryConfigController } from "../../../src/controllers/cluster/discovery-config.js";
import { DISCOVERY_SERVICE_UNAVAILABLE, discoveryServiceController } from "../../../src/controllers/cluster/discovery-service.js";
import { discoveryEndpointController } from "../../../src/controllers/cluster/endpoint.js";
import { discoveryControllers } from "../../../src/controllers/cluster/index.js";
import { kubernetesPullController } from "../../../src/controllers/cluster/kubernetes-pull.js";
import { kubernetesPushController } from "../../../src/controllers/cluster/kubernetes-push.js";
import { localAffiliateController } from "../../../src/controllers/cluster/local-affiliate.js";
import { memberController } from "../../../src/controllers/cluster/member.js";
import { FakeKubernetes } from "../../helpers/fake-kubernetes.js";
import { controlPlaneConfig, eventually, publishConfig, put, spec, startRuntime } from "../runtime/harness.js";

const WAIT = 3000;
const KUBE_ON = `  discovery:
    enabled: true
    registries:
      kubernetes: {}
      service:
        disabled: true
`;
const NODE_ID_1 = "7x1SuC8Ege5BGXdAfTEff5iQnlWZLfv9h1LGMxA2pYkC";
const NODE_ID_2 = "9dwHNUViZlPlIervqX9Qo256RUhrfhgO0xBBnKcKl4F";

const kubeletKubeconfig = `apiVersion: v1
kind: Config
clusters:
  - name: local
    cluster: { server: "https://127.0.0.1:7445", certificate-authority-data: Q0E= }
users:
  - name: kubelet
    user: { client-certificate-data: Q0VSVA==, client-key-data: S0VZ }
contexts:
  - name: kubelet@local
    context: { cluster: local, user: kubelet }
current-context: kubelet@local
`;

/** A client of one shared MemoryKubeApi; closing it ends only its own watches. */
class Client implements KubeApi {
  private readonly ac = new AbortController();
  constructor(private readonly cluster: MemoryKubeApi) {}
  get server() {
    return this.cluster.server;
  }
  list<T extends KubeObject>(kind: KubeKind, opts?: ListOptions, signal?: AbortSignal) {
    return this.cluster.list<T>(kind, opts, signal);
  }
  watch<T extends KubeObject>(kind: KubeKind, opts: WatchOptions, onEvent: (e: WatchEvent<T>) => void, signal?: AbortSignal) {
    return this.cluster.watch<T>(kind, opts, onEvent, signal ? AbortSignal.any([signal, this.ac.signal]) : this.ac.signal);
  }
  async close() {
    this.ac.abort();
  }
}

/** The annotator over a MemoryKubeApi, so pushes show up in the other nodes' watches. */
function memoryAnnotator(cluster: MemoryKubeApi): NodeAnnotatorFactory {
  return (): NodeAnnotator => ({
    async annotate(name, annotations) {
      const [node] = (await cluster.list<NodeObject>(NODES, { fieldSelector: `metadata.name=${name}` })).items;
      if (!node) return "missing";
      const next = withAnnotations(node, annotations);
      if (!next) return "unchanged";
      cluster.put(NODES, next);
      return "updated";
    },
    close: async () => {},
  });
}

const kubeNode = (name: string, cp: boolean, hostname: string, os = "Talos (v1.14.0)"): NodeObject => ({
  apiVersion: "v1",
  kind: "Node",
  metadata: { name, labels: cp ? { "node-role.kubernetes.io/control-plane": "" } : {}, annotations: { "node.alpha.kubernetes.io/ttl": "0" } },
  status: { addresses: [{ type: "InternalIP", address: "10.0.0.9" }, { type: "Hostname", address: hostname }], nodeInfo: { osImage: os } },
});

/** The node facts the local affiliate is built from, as the network, k8s and identity controllers publish them. */
function nodeFacts(s: InMemoryState, o: { nodeId: string; nodename: string; addresses: string[]; domain?: string; apiPort?: number; kubelet?: boolean }) {
  put(s, CLUSTER_NS, IdentityType.type, "local", { nodeId: o.nodeId });
  put(s, K8S_NS, NodenameType.type, "nodename", { nodename: o.nodename, hostnameVersion: "1", skipNodeRegistration: false });
  put(s, "network", "HostnameStatuses.net.talos.dev", "hostname", { hostname: o.nodename, domainname: o.domain ?? "" });
  put(s, "network", "NodeAddresses.net.talos.dev", "routed-no-k8s", { addresses: o.addresses.map((a) => `${a}/24`), sortAlgorithm: "v1" });
  if (o.apiPort) put(s, "controlplane", "APIServerConfigs.kubernetes.talos.dev", "kube-apiserver", { localPort: o.apiPort });
  if (o.kubelet !== false) put(s, K8S_NS, KubeletConfigType.type, "kubelet", { image: "kubelet" });
}

const members = (s: InMemoryState) =>
  Object.fromEntries(s.list(CLUSTER_NS, MemberType.type).map((r) => [r.metadata.id, r.spec as MemberSpec]));

describe("cluster.ConfigController", () => {
  it("v1alpha1 layout: the Kubernetes registry on, the service off", async () => {
    const s = new InMemoryState();
    startRuntime(s, [discoveryConfigController()]);
    publishConfig(s, controlPlaneConfig({ clusterExtra: KUBE_ON }));
    await eventually(() => !!spec(s, "config", DiscoveryConfigType.type, "cluster"), WAIT, "config");
    expect(spec(s, "config", DiscoveryConfigType.type, "cluster")).toEqual({
      discoveryEnabled: true,
      registryKubernetesEnabled: true,
      registryServiceEnabled: false,
      serviceEndpoint: "",
      serviceEncryptionKey: null,
      serviceClusterID: "",
      serviceEndpoints: [],
    });
  });

  it("Talos 1.14 layout: DiscoveryServiceConfig and DiscoveryIdentityConfig documents", async () => {
    const g = await generateConfigs({ clusterName: "demo", endpoint: "https://10.5.0.2:6443" });
    const identity = parse(g.controlplane.split("\n---\n").find((d) => d.includes("kind: DiscoveryIdentityConfig"))!) as { clusterID: string; clusterSecret: string };
    const s = new InMemoryState();
    startRuntime(s, [discoveryConfigController()]);
    publishConfig(s, g.controlplane);
    await eventually(() => !!spec(s, "config", DiscoveryConfigType.type, "cluster"), WAIT, "config");
    const d = spec<DiscoveryConfigSpec>(s, "config", DiscoveryConfigType.type, "cluster")!;
    expect(d).toMatchObject({
      registryKubernetesEnabled: false,
      registryServiceEnabled: true,
      serviceEndpoint: "discovery.talos.dev:443",
      serviceEncryptionKey: identity.clusterSecret,
      serviceClusterID: identity.clusterID,
      serviceEndpoints: [{ name: "default", endpoint: "discovery.talos.dev:443", insecure: false }],
    });
    expect(specYaml(DiscoveryConfigType, d)).toContain("serviceEndpoints:\n    - name: default\n      endpoint: discovery.talos.dev:443\n      insecure: false\n");
  });

  it("a service without a cluster identity is an error naming what is missing", async () => {
    const s = new InMemoryState();
    const rt = startRuntime(s, [discoveryConfigController()]);
    const cfg = controlPlaneConfig({ clusterExtra: "  discovery:\n    enabled: true\n" }).replace("  id: cluster-id-1\n  secret: cluster-secret\n", "");
    publishConfig(s, cfg);
    await eventually(() => (rt.status("cluster.ConfigController")?.consecutiveFailures ?? 0) > 0, WAIT, "failure");
    expect(rt.status("cluster.ConfigController")!.lastError).toMatch(/cluster identity is required when discovery service is configured/);
  });
});

describe("Kubernetes registry encoding", () => {
  const affiliate: AffiliateSpec = {
    nodeId: NODE_ID_1,
    addresses: ["10.0.0.2", "192.168.3.4"],
    hostname: "foo.com",
    nodename: "bar",
    operatingSystem: "Talos (v1.14.0)",
    machineType: "controlplane",
    controlPlane: { port: 443 },
  };

  it("writes upstream's annotation keys, empty for what is unset", () => {
    expect(annotationsFromAffiliate(NODE_ID_1, affiliate)).toEqual({
      "cluster.talos.dev/node-id": NODE_ID_1,
      "networking.talos.dev/api-server-port": "443",
      "networking.talos.dev/assigned-prefixes": "",
      "networking.talos.dev/kubespan-endpoints": "",
      "networking.talos.dev/kubespan-ip": "",
      "networking.talos.dev/kubespan-public-key": "",
      "networking.talos.dev/kubespan-exclude-advertised-networks": "",
      "networking.talos.dev/self-ips": "10.0.0.2,192.168.3.4",
    });
  });

  it("reads a Node back: names and OS from the Node, role from its label, bad addresses skipped", () => {
    const n = kubeNode("bar", true, "foo.com", "Talos (v1.0.0)");
    expect(affiliateFromNode(n)).toBeUndefined(); // no node id: not part of discovery
    n.metadata!.annotations = { ...withAnnotations(n, annotationsFromAffiliate(NODE_ID_1, affiliate))!.metadata!.annotations! };
    n.metadata!.annotations["networking.talos.dev/self-ips"] = "10.0.0.2,bogus,192.168.3.4";
    n.metadata!.annotations["networking.talos.dev/kubespan-endpoints"] = "10.0.0.2:51820,[fd00::1]:51820,nope";
    expect(affiliateFromNode(n)).toEqual({
      ...affiliate,
      operatingSystem: "Talos (v1.0.0)",
      kubespan: { publicKey: "", address: "", additionalAddresses: [], endpoints: ["10.0.0.2:51820", "[fd00::1]:51820"], excludeAdvertisedNetworks: [] },
    });
    const w = kubeNode("w", false, "w.local");
    w.metadata!.annotations = { "cluster.talos.dev/node-id": NODE_ID_2, "networking.talos.dev/api-server-port": "x" };
    expect(affiliateFromNode(w)).toEqual({ nodeId: NODE_ID_2, addresses: [], hostname: "w.local", nodename: "w", operatingSystem: "Talos (v1.14.0)", machineType: "worker" });
  });

  it("merges as upstream: unions of addresses, later scalars win, the first OS stays", () => {
    const a: AffiliateSpec = { nodeId: "x", addresses: ["10.0.0.1"], hostname: "a", nodename: "", operatingSystem: "Talos (v1)", machineType: "unknown" };
    const b: AffiliateSpec = { nodeId: "x", addresses: ["10.0.0.1", "10.0.0.2"], hostname: "b", nodename: "nb", operatingSystem: "Other", machineType: "worker", controlPlane: { port: 6443 } };
    expect(mergeAffiliate(a, b)).toEqual({ nodeId: "x", addresses: ["10.0.0.1", "10.0.0.2"], hostname: "b", nodename: "nb", operatingSystem: "Talos (v1)", machineType: "worker", controlPlane: { port: 6443 } });
    expect(a.addresses).toEqual(["10.0.0.1"]); // inputs untouched
  });
});

/** The KubernetesClient fake, serving Nodes. */
function nodeKubernetes(): FakeKubernetes {
  const k = new FakeKubernetes();
  k.kinds.set("v1/Node", "cluster");
  return k;
}

describe("node annotator (KubernetesClient)", () => {
  it("changes only the given annotations, removes empty ones, and retries a conflict", async () => {
    const k = nodeKubernetes();
    k.put({ apiVersion: "v1", kind: "Node", metadata: { name: "n1", annotations: { keep: "1", "networking.talos.dev/kubespan-ip": "fd00::1" } } });
    let conflicts = 1;
    k.beforeUpdate = () => {
      // The kubelet updating its status in between: the first write is stale.
      if (conflicts-- > 0) k.put({ ...k.getObject("v1", "Node", "n1")!, status: { touched: true } });
    };
    const a = nodeAnnotatorFromClient(k.client());
    expect(await a.annotate("n1", { "cluster.talos.dev/node-id": "ID", "networking.talos.dev/kubespan-ip": "" })).toBe("updated");
    const n = k.getObject("v1", "Node", "n1")!;
    expect(n.metadata!.annotations).toEqual({ keep: "1", "cluster.talos.dev/node-id": "ID" });
    expect(n.status).toEqual({ touched: true });
    expect(k.calls.filter((c) => c.verb === "update")).toHaveLength(2);
    expect(await a.annotate("n1", { "cluster.talos.dev/node-id": "ID" })).toBe("unchanged");
    expect(await a.annotate("n9", { x: "1" })).toBe("missing");
    k.beforeUpdate = () => k.put({ ...k.getObject("v1", "Node", "n1")! });
    await expect(a.annotate("n1", { x: "2" })).rejects.toThrow(/unable to update node "n1" due to conflict/);
  });
});

describe("cluster.LocalAffiliateController + MemberController + EndpointController", () => {
  it("announces this node only while discovery is on; members and endpoints follow the affiliates", async () => {
    const s = new InMemoryState();
    startRuntime(s, [discoveryConfigController(), localAffiliateController(), affiliateMergeController(), memberController(), discoveryEndpointController()]);
    nodeFacts(s, { nodeId: NODE_ID_1, nodename: "cp1", addresses: ["10.5.0.2"], domain: "example.org", apiPort: 6443 });
    publishConfig(s, controlPlaneConfig());
    await eventually(() => !!spec(s, CONTROLPLANE_NS, EndpointType.type, "discovery"), WAIT, "endpoint");
    // No cluster.discovery: no affiliate, no members, an empty discovery endpoint (upstream).
    expect(s.list(CLUSTER_NS, AffiliateType.type)).toEqual([]);
    expect(members(s)).toEqual({});
    expect(spec(s, CONTROLPLANE_NS, EndpointType.type, "discovery")).toEqual({ addresses: [], hosts: [] });

    publishConfig(s, controlPlaneConfig({ clusterExtra: KUBE_ON }));
    await eventually(() => !!members(s).cp1, WAIT, "member");
    const local = s.get({ namespace: CLUSTER_NS, type: AffiliateType.type, id: NODE_ID_1 })!;
    expect(local.metadata.owner).toBe("cluster.LocalAffiliateController");
    expect(specYaml(AffiliateType, local.spec as AffiliateSpec)).toBe(
      `nodeId: ${NODE_ID_1}\naddresses:\n    - 10.5.0.2\nhostname: cp1.example.org\nnodename: cp1\noperatingSystem: Talos (v1.14.0)\nmachineType: controlplane\ncontrolPlane:\n    port: 6443\n`,
    );
    expect(members(s).cp1).toEqual({ nodeId: NODE_ID_1, addresses: ["10.5.0.2"], hostname: "cp1.example.org", machineType: "controlplane", operatingSystem: "Talos (v1.14.0)", controlPlane: { port: 6443 } });

    // A worker reported by a registry: a member, but not a control-plane endpoint; a second control plane is.
    put(s, CLUSTER_RAW_NS, AffiliateType.type, `k8s/${NODE_ID_2}`, { nodeId: NODE_ID_2, addresses: ["10.5.0.3"], hostname: "w1", nodename: "w1", operatingSystem: "Talos (v1.14.0)", machineType: "worker" });
    put(s, CLUSTER_RAW_NS, AffiliateType.type, "k8s/cp2id", { nodeId: "cp2id", addresses: ["10.5.0.1"], hostname: "cp2", nodename: "cp2", operatingSystem: "Talos (v1.14.0)", machineType: "controlplane" });
    // An affiliate without a node name is no member.
    put(s, CLUSTER_RAW_NS, AffiliateType.type, "service/anon", { nodeId: "anon", addresses: ["10.5.0.9"], hostname: "", operatingSystem: "", machineType: "unknown" });
    await eventually(() => Object.keys(members(s)).sort().join() === "cp1,cp2,w1", WAIT, "members");
    expect(s.list(CLUSTER_NS, AffiliateType.type).map((r) => r.metadata.id).sort()).toEqual([NODE_ID_1, NODE_ID_2, "anon", "cp2id"].sort());
    await eventually(() => spec<{ addresses: string[] }>(s, CONTROLPLANE_NS, EndpointType.type, "discovery")?.addresses.join() === "10.5.0.1,10.5.0.2", WAIT, "endpoints");

    // A registry forgetting a node removes its affiliate and member; discovery off removes the local one too.
    s.destroy({ namespace: CLUSTER_RAW_NS, type: AffiliateType.type, id: "k8s/cp2id" }, "");
    await eventually(() => Object.keys(members(s)).sort().join() === "cp1,w1", WAIT, "cp2 gone");
    publishConfig(s, controlPlaneConfig());
    await eventually(() => Object.keys(members(s)).join() === "w1", WAIT, "local gone");
    expect(spec(s, CONTROLPLANE_NS, EndpointType.type, "discovery")).toEqual({ addresses: [], hosts: [] });
  });

  it("a registry echoing this node's own id does not replace the local affiliate", async () => {
    const s = new InMemoryState();
    const rt = startRuntime(s, [discoveryConfigController(), localAffiliateController(), affiliateMergeController(), memberController()]);
    nodeFacts(s, { nodeId: NODE_ID_1, nodename: "cp1", addresses: ["10.5.0.2"] });
    publishConfig(s, controlPlaneConfig({ type: "worker", clusterExtra: KUBE_ON }));
    await eventually(() => !!members(s).cp1, WAIT, "member");
    put(s, CLUSTER_RAW_NS, AffiliateType.type, `k8s/${NODE_ID_1}`, { nodeId: NODE_ID_1, addresses: ["1.2.3.4"], hostname: "evil", nodename: "evil", operatingSystem: "", machineType: "controlplane" });
    put(s, CLUSTER_RAW_NS, AffiliateType.type, `k8s/${NODE_ID_2}`, { nodeId: NODE_ID_2, addresses: ["10.5.0.3"], hostname: "w1", nodename: "w1", operatingSystem: "", machineType: "worker" });
    await eventually(() => !!members(s).w1, WAIT, "w1");
    expect(Object.keys(members(s)).sort()).toEqual(["cp1", "w1"]);
    expect(members(s).cp1.addresses).toEqual(["10.5.0.2"]);
    expect(members(s).cp1.machineType).toBe("worker");
    expect(rt.statuses().filter((st) => st.consecutiveFailures > 0)).toEqual([]);
  });
});

describe("cluster.KubernetesPullController / KubernetesPushController", () => {
  it("pull: other annotated Nodes become raw affiliates; not before the kubelet kubeconfig; gone when disabled", async () => {
    const cluster = new MemoryKubeApi();
    const clients: Client[] = [];
    const factory: KubeApiFactory = () => {
      const c = new Client(cluster);
      clients.push(c);
      return c;
    };
    const files = new MemoryFiles();
    const s = new InMemoryState();
    startRuntime(s, [discoveryConfigController(), kubernetesPullController({ files, kubeApi: factory, waitMs: 10, retryMs: 5 })]);
    nodeFacts(s, { nodeId: NODE_ID_1, nodename: "cp1", addresses: ["10.5.0.2"] });
    publishConfig(s, controlPlaneConfig({ clusterExtra: KUBE_ON }));
    const self = kubeNode("cp1", true, "cp1");
    self.metadata!.annotations = { "cluster.talos.dev/node-id": NODE_ID_1 };
    const other = kubeNode("w1", false, "w1.local");
    other.metadata!.annotations = { "cluster.talos.dev/node-id": NODE_ID_2, "networking.talos.dev/self-ips": "10.5.0.3" };
    cluster.put(NODES, self);
    cluster.put(NODES, other);
    cluster.put(NODES, kubeNode("plain", false, "plain")); // not in discovery
    await new Promise((r) => setTimeout(r, 50));
    expect(clients).toHaveLength(0); // the kubelet has not bootstrapped yet

    files.addFile("/etc/kubernetes/kubeconfig-kubelet", kubeletKubeconfig);
    await eventually(() => s.list(CLUSTER_RAW_NS, AffiliateType.type).length === 1, WAIT, "raw affiliate");
    expect(spec(s, CLUSTER_RAW_NS, AffiliateType.type, `k8s/${NODE_ID_2}`)).toEqual({
      nodeId: NODE_ID_2, addresses: ["10.5.0.3"], hostname: "w1.local", nodename: "w1", operatingSystem: "Talos (v1.14.0)", machineType: "worker",
    });
    // The watch follows changes.
    other.metadata!.annotations["networking.talos.dev/self-ips"] = "10.5.0.3,10.5.0.4";
    cluster.put(NODES, other);
    await eventually(() => spec<AffiliateSpec>(s, CLUSTER_RAW_NS, AffiliateType.type, `k8s/${NODE_ID_2}`)?.addresses.length === 2, WAIT, "updated");
    cluster.remove(NODES, "w1");
    await eventually(() => s.list(CLUSTER_RAW_NS, AffiliateType.type).length === 0, WAIT, "removed");
    cluster.put(NODES, other);
    await eventually(() => s.list(CLUSTER_RAW_NS, AffiliateType.type).length === 1, WAIT, "back");

    publishConfig(s, controlPlaneConfig());
    await eventually(() => s.list(CLUSTER_RAW_NS, AffiliateType.type).length === 0, WAIT, "disabled");
    expect(cluster.openWatches).toBe(0);
  });

  it("push: the local affiliate lands on this node's Node once it is registered; a failure is an error and retried", async () => {
    const k = nodeKubernetes();
    const files = new MemoryFiles().addFile("/etc/kubernetes/kubeconfig-kubelet", kubeletKubeconfig);
    const s = new InMemoryState();
    const rt = startRuntime(s, [
      discoveryConfigController(),
      localAffiliateController(),
      kubernetesPushController({ files, annotator: () => nodeAnnotatorFromClient(k.client()), waitMs: 10 }),
    ]);
    nodeFacts(s, { nodeId: NODE_ID_1, nodename: "cp1", addresses: ["10.5.0.2"], apiPort: 6443 });
    publishConfig(s, controlPlaneConfig({ clusterExtra: KUBE_ON }));
    await eventually(() => k.calls.some((c) => c.verb === "get"), WAIT, "looked for the Node");
    k.put({ apiVersion: "v1", kind: "Node", metadata: { name: "cp1", annotations: {} } });
    await eventually(() => !!k.getObject("v1", "Node", "cp1")?.metadata?.annotations?.["cluster.talos.dev/node-id"], WAIT, "pushed");
    expect(k.getObject("v1", "Node", "cp1")!.metadata!.annotations).toEqual({
      "cluster.talos.dev/node-id": NODE_ID_1,
      "networking.talos.dev/self-ips": "10.5.0.2",
      "networking.talos.dev/api-server-port": "6443",
    });
    // New addresses are pushed; an API server that is down makes the controller fail and retry.
    k.down = true;
    put(s, "network", "NodeAddresses.net.talos.dev", "routed-no-k8s", { addresses: ["10.5.0.2/24", "10.5.0.7/24"], sortAlgorithm: "v1" });
    await eventually(() => (rt.status("cluster.KubernetesPushController")?.consecutiveFailures ?? 0) > 0, WAIT, "failing");
    expect(rt.status("cluster.KubernetesPushController")!.lastError).toMatch(/error pushing to Kubernetes registry: .*ECONNREFUSED/);
    k.down = false;
    await eventually(() => k.getObject("v1", "Node", "cp1")?.metadata?.annotations?.["networking.talos.dev/self-ips"] === "10.5.0.2,10.5.0.7", WAIT, "pushed again");
  });

  it("push: nothing is written while the registry is disabled or there is no kubelet", async () => {
    const k = nodeKubernetes();
    k.put({ apiVersion: "v1", kind: "Node", metadata: { name: "cp1", annotations: {} } });
    const files = new MemoryFiles().addFile("/etc/kubernetes/kubeconfig-kubelet", kubeletKubeconfig);
    const s = new InMemoryState();
    startRuntime(s, [discoveryConfigController(), localAffiliateController(), kubernetesPushController({ files, annotator: () => nodeAnnotatorFromClient(k.client()), waitMs: 10 })]);
    nodeFacts(s, { nodeId: NODE_ID_1, nodename: "cp1", addresses: ["10.5.0.2"], kubelet: false });
    publishConfig(s, controlPlaneConfig({ clusterExtra: KUBE_ON }));
    await eventually(() => !!spec(s, CLUSTER_NS, AffiliateType.type, NODE_ID_1), WAIT, "affiliate");
    await new Promise((r) => setTimeout(r, 50));
    expect(k.calls).toEqual([]);
  });
});

describe("cluster.DiscoveryServiceController", () => {
  it("says once that the service is not contacted, and fails nothing", async () => {
    const logs: string[] = [];
    const s = new InMemoryState();
    const rt = new ControllerRuntime(s, { logger: (c, msg) => logs.push(`${c}: ${msg}`) });
    for (const c of [discoveryConfigController(), discoveryServiceController()]) rt.register(c);
    rt.start();
    try {
      publishConfig(s, controlPlaneConfig({ clusterExtra: "  discovery:\n    enabled: true\n" }).replace("secret: cluster-secret", "secret: Zm9vYmFy"));
      await eventually(() => logs.some((l) => l.includes(DISCOVERY_SERVICE_UNAVAILABLE)), WAIT, "log");
      expect(spec<DiscoveryConfigSpec>(s, "config", DiscoveryConfigType.type, "cluster")!.registryServiceEnabled).toBe(true);
      publishConfig(s, controlPlaneConfig({ clusterExtra: "  discovery:\n    enabled: true\n" }).replace("secret: cluster-secret", "secret: Zm9vYmFy").replace("demo", "demo2"));
      await new Promise((r) => setTimeout(r, 50));
      expect(logs.filter((l) => l.includes(DISCOVERY_SERVICE_UNAVAILABLE))).toHaveLength(1);
      expect(rt.statuses().filter((st) => st.consecutiveFailures > 0)).toEqual([]);
      expect(s.list(CLUSTER_RAW_NS, AffiliateType.type)).toEqual([]);
    } finally {
      await rt.stop();
    }
  });
});

describe("two nodes through one Kubernetes registry", () => {
  it("each lists both as members; the worker learns the control plane's address as a discovery endpoint", async () => {
    const cluster = new MemoryKubeApi();
    const factory: KubeApiFactory = () => new Client(cluster);
    const annotator = memoryAnnotator(cluster);
    const start = (o: Parameters<typeof nodeFacts>[1], type: string) => {
      const s = new InMemoryState();
      const files = new MemoryFiles().addFile("/etc/kubernetes/kubeconfig-kubelet", kubeletKubeconfig);
      startRuntime(s, discoveryControllers({ files, kubeApi: factory, annotator, waitMs: 10, retryMs: 5 }));
      nodeFacts(s, o);
      publishConfig(s, controlPlaneConfig({ type, clusterExtra: KUBE_ON }));
      return s;
    };
    // The kubelets register their Nodes (upstream: the control-plane label comes from the node's config).
    cluster.put(NODES, kubeNode("cp1", true, "cp1"));
    cluster.put(NODES, kubeNode("w1", false, "w1"));
    const cp = start({ nodeId: NODE_ID_1, nodename: "cp1", addresses: ["10.5.0.2"], apiPort: 6443 }, "controlplane");
    const w = start({ nodeId: NODE_ID_2, nodename: "w1", addresses: ["10.5.0.3"] }, "worker");
    for (const s of [cp, w]) await eventually(() => Object.keys(members(s)).sort().join() === "cp1,w1", WAIT, "both members");
    expect(members(w).cp1).toEqual({ nodeId: NODE_ID_1, addresses: ["10.5.0.2"], hostname: "cp1", machineType: "controlplane", operatingSystem: "Talos (v1.14.0)", controlPlane: { port: 6443 } });
    expect(members(cp).w1).toEqual({ nodeId: NODE_ID_2, addresses: ["10.5.0.3"], hostname: "w1", machineType: "worker", operatingSystem: "Talos (v1.14.0)" });
    expect(spec(w, CONTROLPLANE_NS, EndpointType.type, "discovery")).toEqual({ addresses: ["10.5.0.2"], hosts: [] });
    expect(spec(cp, CLUSTER_RAW_NS, AffiliateType.type, `k8s/${NODE_ID_2}`)).toBeDefined();
    expect(cp.get({ namespace: CLUSTER_NS, type: AffiliateType.type, id: NODE_ID_2 })!.metadata.owner).toBe("cluster.AffiliateMergeController");
  });
});
