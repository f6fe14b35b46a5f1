/**
 * The Kubernetes status controllers on the real in-memory store and runtime: node IPs, the Node status from a
 * watch (MemoryKubeApi behind the kubelet kubeconfig on MemoryFiles), static pod statuses from the kubelet,
 * the control plane endpoints, and KubePrism running a real load balancer on a free loopback port.
 */
import net from "node:net";
import { describe, expect, it } from "vitest";
import { MemoryFiles } from "../../../src/host/files/index.js";
import type { KubeApi, KubeApiFactory, ListOptions, WatchEvent, WatchOptions } from "../../../src/host/kube/api.js";
import type { KubeletClientOptions, KubeletPod } from "../../../src/host/kube/kubelet.js";
import { MemoryKubeApi } from "../../../src/host/kube/memory.js";
import { TcpBalancer, type LoadBalancer, type LoadBalancerOptions } from "../../../src/host/tcp-balancer.js";
import { endpointAddresses, endpointController } from "../../../src/controllers/k8s/endpoint.js";
import { kubeletStaticPodController } from "../../../src/controllers/k8s/kubelet-static-pod.js";
import { kubePrismController } from "../../../src/controllers/k8s/kubeprism.js";
import { kubePrismConfigController } from "../../../src/controllers/k8s/kubeprism-config.js";
import { kubePrismEndpointsController } from "../../../src/controllers/k8s/kubeprism-endpoints.js";
import { nodeIPController } from "../../../src/controllers/k8s/nodeip.js";
import { nodeIPConfigController } from "../../../src/controllers/k8s/nodeip-config.js";
import { nodeStatusController } from "../../../src/controllers/k8s/node-status.js";
import { staticEndpointController } from "../../../src/controllers/k8s/static-endpoint.js";
import { kubernetesStatusControllers } from "../../../src/controllers/k8s/status-controllers.js";
import { ENDPOINTSLICES, NODES, type KubeKind, type KubeObject, type NodeObject } from "../../../src/machinery/kubernetes/objects.js";
import { MemberType } from "../../../src/machinery/resources/types/cluster.js";
import { K8S_NS, KubeletConfigType, NodenameType, NodeStatusType, StaticPodStatusType, type NodeStatusSpec } from "../../../src/machinery/resources/types/k8s.js";
import {
  CONTROLPLANE_NS,
  EndpointType,
  KubePrismConfigType,
  KubePrismEndpointsType,
  KubePrismStatusesType,
  NodeIPConfigType,
  NodeIPType,
  type EndpointSpec,
  type KubePrismStatusesSpec,
} from "../../../src/machinery/resources/types/k8s-status.js";
import { RUNTIME_NS, ServiceType } from "../../../src/machinery/resources/types/runtime.js";
import { KubernetesCertsType, KubernetesDynamicCertsType, KubernetesRootType, SECRETS_NS } from "../../../src/machinery/resources/types/secrets.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { controlPlaneConfig, eventually, publishConfig, put, spec, startRuntime } from "../runtime/harness.js";

const WAIT = 10_000;

const kubeletKubeconfig = (server: string) => `apiVersion: v1
kind: Config
clusters:
  - name: local
    cluster:
      server: ${server}
      certificate-authority-data: Q0E=
users:
  - name: kubelet
    user:
      client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem
      client-key: /var/lib/kubelet/pki/kubelet-client-current.pem
contexts:
  - name: kubelet@local
    context: { cluster: local, user: kubelet }
current-context: kubelet@local
`;

/** One client of the shared in-memory cluster: closing it ends its watches, as closing a real client does. */
class Client implements KubeApi {
  closed = false;
  private readonly ac = new AbortController();
  constructor(
    readonly kubeconfig: string,
    private readonly cluster: MemoryKubeApi,
  ) {}
  get server() {
    return this.cluster.server;
  }
  list<T extends KubeObject>(kind: KubeKind, opts?: ListOptions, signal?: AbortSignal) {
    if (this.closed) return Promise.reject(new Error("client is closed"));
    return this.cluster.list<T>(kind, opts, signal);
  }
  watch<T extends KubeObject>(kind: KubeKind, opts: WatchOptions, onEvent: (e: WatchEvent<T>) => void, signal?: AbortSignal) {
    if (this.closed) return Promise.reject(new Error("client is closed"));
    return this.cluster.watch<T>(kind, opts, onEvent, signal ? AbortSignal.any([signal, this.ac.signal]) : this.ac.signal);
  }
  async close() {
    this.closed = true;
    this.ac.abort();
  }
}

/** A factory handing out clients of one in-memory "cluster", remembering each one. */
function fakeCluster() {
  const cluster = new MemoryKubeApi();
  const clients: Client[] = [];
  const factory: KubeApiFactory = (kubeconfig) => {
    const c = new Client(kubeconfig, cluster);
    clients.push(c);
    return c;
  };
  return { cluster, clients, factory };
}

const node = (name: string, over: Partial<NodeObject> = {}): NodeObject => ({
  metadata: { name, labels: { "kubernetes.io/hostname": name }, annotations: { a: "1" } },
  spec: { podCIDRs: ["10.244.0.0/24", "bogus"] },
  status: { conditions: [{ type: "Ready", status: "True" }] },
  ...over,
});

describe("k8s.NodeIPConfigController + k8s.NodeIPController", () => {
  it("publishes the subnets and picks one address per family from the routed addresses", async () => {
    const s = new InMemoryState();
    startRuntime(s, [nodeIPConfigController(), nodeIPController()]);
    publishConfig(s, controlPlaneConfig());
    await eventually(() => !!spec(s, K8S_NS, NodeIPConfigType.type, "kubelet"), WAIT, "NodeIPConfig");
    expect(spec(s, K8S_NS, NodeIPConfigType.type, "kubelet")).toEqual({ validSubnets: ["0.0.0.0/0"], excludeSubnets: ["10.244.0.0/16", "10.96.0.0/12"] });
    put(s, "network", "NodeAddresses.net.talos.dev", "routed-no-k8s", { addresses: ["10.5.0.2/24", "10.5.0.3/24", "fd00::2/64"], sortAlgorithm: "v1" });
    await eventually(() => !!spec(s, K8S_NS, NodeIPType.type, "kubelet"), WAIT, "NodeIP");
    expect(spec(s, K8S_NS, NodeIPType.type, "kubelet")).toEqual({ addresses: ["10.5.0.2"] });
  });
});

describe("k8s.NodeStatusController", () => {
  it("watches this node's Node with the kubelet kubeconfig and follows it; rebuilds on a new kubeconfig", async () => {
    const s = new InMemoryState();
    const files = new MemoryFiles();
    const { cluster, clients, factory } = fakeCluster();
    startRuntime(s, [nodeStatusController({ files, root: "/node", kubeApi: factory, pollMs: 20, retryMs: 5 })]);
    put(s, K8S_NS, NodenameType.type, "nodename", { nodename: "node-1", hostnameVersion: "1", skipNodeRegistration: false });
    put(s, K8S_NS, KubeletConfigType.type, "kubelet", { image: "kubelet" });
    cluster.put(NODES, node("node-2"));
    await new Promise((r) => setTimeout(r, 50));
    expect(clients).toHaveLength(0); // no kubeconfig yet: the kubelet has not bootstrapped

    files.addFile("/node/var/lib/kubelet/pki/kubelet-client-current.pem", "CERT AND KEY");
    files.addFile("/node/etc/kubernetes/kubeconfig-kubelet", kubeletKubeconfig("https://127.0.0.1:7445"));
    await eventually(() => clients.length === 1, WAIT, "a client");
    expect(clients[0].kubeconfig).toContain(`client-certificate-data: ${Buffer.from("CERT AND KEY").toString("base64")}`);
    // The Node is not registered yet: nothing to report.
    await new Promise((r) => setTimeout(r, 50));
    expect(s.list(K8S_NS, NodeStatusType.type)).toHaveLength(0);

    cluster.put(NODES, node("node-1"));
    await eventually(() => !!spec(s, K8S_NS, NodeStatusType.type, "node-1"), WAIT, "NodeStatus");
    expect(spec(s, K8S_NS, NodeStatusType.type, "node-1")).toEqual({
      nodename: "node-1",
      nodeReady: true,
      unschedulable: false,
      labels: { "kubernetes.io/hostname": "node-1" },
      annotations: { a: "1" },
      podCIDRs: ["10.244.0.0/24"],
    });
    cluster.put(NODES, node("node-1", { spec: { unschedulable: true }, status: { conditions: [{ type: "Ready", status: "False" }] } }));
    await eventually(() => spec<NodeStatusSpec>(s, K8S_NS, NodeStatusType.type, "node-1")?.unschedulable === true, WAIT, "cordoned");
    expect(spec<NodeStatusSpec>(s, K8S_NS, NodeStatusType.type, "node-1")?.nodeReady).toBe(false);
    expect(s.list(K8S_NS, NodeStatusType.type).map((r) => r.metadata.id)).toEqual(["node-1"]);

    // The kubelet rotated its certificate: a new client, the old one closed.
    files.addFile("/node/var/lib/kubelet/pki/kubelet-client-current.pem", "NEW CERT");
    await eventually(() => clients.length === 2, WAIT, "a second client");
    expect(clients[0].closed).toBe(true);

    cluster.remove(NODES, "node-1");
    await eventually(() => s.list(K8S_NS, NodeStatusType.type).length === 0, WAIT, "NodeStatus gone with the Node");

    cluster.put(NODES, node("node-1"));
    await eventually(() => s.list(K8S_NS, NodeStatusType.type).length === 1, WAIT, "back");
    put(s, K8S_NS, NodenameType.type, "nodename", { nodename: "node-1", hostnameVersion: "1", skipNodeRegistration: true });
    await eventually(() => s.list(K8S_NS, NodeStatusType.type).length === 0, WAIT, "skipNodeRegistration clears it");
    expect(clients[1].closed).toBe(true);
  });

  it("replaces a client after five failed watch attempts in a row", async () => {
    const s = new InMemoryState();
    const files = new MemoryFiles().addFile("/etc/kubernetes/kubeconfig-kubelet", kubeletKubeconfig("https://127.0.0.1:7445")).addFile("/var/lib/kubelet/pki/kubelet-client-current.pem", "C");
    const { cluster, clients, factory } = fakeCluster();
    startRuntime(s, [nodeStatusController({ files, kubeApi: factory, pollMs: 20, retryMs: 2 })]);
    put(s, K8S_NS, NodenameType.type, "nodename", { nodename: "node-1", hostnameVersion: "1", skipNodeRegistration: false });
    put(s, K8S_NS, KubeletConfigType.type, "kubelet", { image: "kubelet" });
    await eventually(() => clients.length === 1, WAIT, "a client");
    cluster.down();
    await eventually(() => clients.length >= 2, WAIT, "a replacement client");
    expect(clients[0].closed).toBe(true);
    cluster.up();
    cluster.put(NODES, node("node-1"));
    await eventually(() => !!spec(s, K8S_NS, NodeStatusType.type, "node-1"), WAIT, "NodeStatus after recovery");
  });
});

describe("k8s.KubeletStaticPodController", () => {
  it("publishes the static pods' statuses from the kubelet with the API server's kubelet client certificate", async () => {
    const s = new InMemoryState();
    const files = new MemoryFiles().addFile("/var/lib/kubelet/pki/kubelet.crt", "KUBELET SELF-SIGNED");
    const calls: KubeletClientOptions[] = [];
    let pods: KubeletPod[] = [
      { metadata: { name: "kube-apiserver-node-1", namespace: "kube-system", annotations: { "kubernetes.io/config.source": "http" } }, status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] } },
      { metadata: { name: "kube-scheduler-node-1", namespace: "kube-system", annotations: { "kubernetes.io/config.source": "file" } }, status: { phase: "Pending" } },
      { metadata: { name: "coredns-abc", namespace: "kube-system", annotations: { "kubernetes.io/config.source": "api" } }, status: { phase: "Running" } },
    ];
    let fail = false;
    const fetchPods = async (o: KubeletClientOptions) => {
      calls.push(o);
      if (fail) throw new Error("dial tcp 127.0.0.1:10250: connect: connection refused");
      return pods;
    };
    startRuntime(s, [kubeletStaticPodController({ files, fetchPods, refreshMs: 10 })]);
    put(s, K8S_NS, NodenameType.type, "nodename", { nodename: "node-1", hostnameVersion: "1", skipNodeRegistration: false });
    put(s, SECRETS_NS, KubernetesRootType.type, "k8s", { issuingCA: { crt: "CLUSTER CA", key: "K" }, acceptedCAs: [] });
    put(s, SECRETS_NS, KubernetesDynamicCertsType.type, "k8s-dynamic-certs", { apiServer: { crt: "", key: "" }, apiServerKubeletClient: { crt: "CLIENT", key: "CLIENT KEY" }, frontProxy: { crt: "", key: "" } });
    await new Promise((r) => setTimeout(r, 30));
    expect(calls).toHaveLength(0); // the kubelet does not run
    put(s, RUNTIME_NS, ServiceType.type, "kubelet", { running: true, healthy: true, unknown: false });
    await eventually(() => s.list(K8S_NS, StaticPodStatusType.type).length === 2, WAIT, "statuses");
    expect(s.list(K8S_NS, StaticPodStatusType.type).map((r) => r.metadata.id).sort()).toEqual(["kube-system/kube-apiserver-node-1", "kube-system/kube-scheduler-node-1"]);
    expect(spec(s, K8S_NS, StaticPodStatusType.type, "kube-system/kube-apiserver-node-1")).toEqual({ phase: "Running", conditions: [{ type: "Ready", status: "True" }] });
    expect(calls[0]).toMatchObject({ cert: "CLIENT", key: "CLIENT KEY", ca: "CLUSTER CA\nKUBELET SELF-SIGNED", servername: "node-1" });

    pods = pods.slice(0, 1);
    await eventually(() => s.list(K8S_NS, StaticPodStatusType.type).length === 1, WAIT, "gone pod dropped");
    fail = true;
    const n = calls.length;
    await eventually(() => calls.length > n + 2, WAIT, "polling on through failures");
    expect(s.list(K8S_NS, StaticPodStatusType.type)).toHaveLength(1);
    put(s, RUNTIME_NS, ServiceType.type, "kubelet", { running: false, healthy: false, unknown: false });
    await eventually(() => s.list(K8S_NS, StaticPodStatusType.type).length === 0, WAIT, "torn down with the kubelet");
  });
});

describe("control plane endpoints", () => {
  it("k8s.StaticEndpointController resolves the cluster endpoint host", async () => {
    const s = new InMemoryState();
    const asked: string[] = [];
    const lookup = async (h: string) => {
      asked.push(h);
      return h === "cp.example" ? ["10.5.0.2", "fd00::0002"] : [h];
    };
    startRuntime(s, [staticEndpointController({ lookup })]);
    publishConfig(s, controlPlaneConfig().replace("https://10.5.0.2:6443", "https://cp.example:6443"));
    await eventually(() => !!spec(s, CONTROLPLANE_NS, EndpointType.type, "controlplane"), WAIT, "endpoint");
    expect(spec(s, CONTROLPLANE_NS, EndpointType.type, "controlplane")).toEqual({ addresses: ["10.5.0.2", "fd00::2"], hosts: ["cp.example"] });
    publishConfig(s, controlPlaneConfig());
    await eventually(() => spec<EndpointSpec>(s, CONTROLPLANE_NS, EndpointType.type, "controlplane")?.hosts.length === 0, WAIT, "IP endpoint");
    expect(spec(s, CONTROLPLANE_NS, EndpointType.type, "controlplane")).toEqual({ addresses: ["10.5.0.2"], hosts: [] });
    expect(asked).toEqual(["cp.example", "10.5.0.2"]);
  });

  it("k8s.EndpointController follows the kubernetes EndpointSlice with the admin kubeconfig on control planes", async () => {
    expect(endpointAddresses(["10.0.0.9", "fd00::9"], { addressType: "IPv4", endpoints: [{ addresses: ["10.0.0.2"] }, { addresses: ["10.0.0.1"] }] })).toEqual([
      "10.0.0.1",
      "10.0.0.2",
      "fd00::9",
    ]);
    const s = new InMemoryState();
    const { cluster, clients, factory } = fakeCluster();
    startRuntime(s, [endpointController({ kubeApi: factory, files: new MemoryFiles(), retryMs: 5 })]);
    publishConfig(s, controlPlaneConfig());
    put(s, K8S_NS, KubeletConfigType.type, "kubelet", { image: "kubelet" });
    await new Promise((r) => setTimeout(r, 30));
    expect(clients).toHaveLength(0);
    put(s, SECRETS_NS, KubernetesCertsType.type, "k8s-certs", { adminKubeconfig: "ADMIN KUBECONFIG", localhostAdminKubeconfig: "", schedulerKubeconfig: "", controllerManagerKubeconfig: "" });
    await eventually(() => clients.length === 1, WAIT, "client");
    expect(clients[0].kubeconfig).toBe("ADMIN KUBECONFIG");
    cluster.put(ENDPOINTSLICES, { metadata: { name: "other", namespace: "default" }, addressType: "IPv4", endpoints: [{ addresses: ["192.0.2.1"] }] });
    cluster.put(ENDPOINTSLICES, { metadata: { name: "kubernetes", namespace: "default" }, addressType: "IPv4", endpoints: [{ addresses: ["10.5.0.3", "10.5.0.2"] }] });
    await eventually(() => !!spec(s, CONTROLPLANE_NS, EndpointType.type, "kube-apiserver"), WAIT, "kube-apiserver endpoints");
    expect(spec(s, CONTROLPLANE_NS, EndpointType.type, "kube-apiserver")).toEqual({ addresses: ["10.5.0.2", "10.5.0.3"], hosts: [] });
    cluster.remove(ENDPOINTSLICES, "kubernetes", "default");
    await new Promise((r) => setTimeout(r, 30));
    expect(spec<EndpointSpec>(s, CONTROLPLANE_NS, EndpointType.type, "kube-apiserver")?.addresses).toEqual(["10.5.0.2", "10.5.0.3"]);
  });

  it("k8s.EndpointController uses the kubelet kubeconfig on workers", async () => {
    const s = new InMemoryState();
    const files = new MemoryFiles();
    const { cluster, clients, factory } = fakeCluster();
    startRuntime(s, [endpointController({ kubeApi: factory, files, pollMs: 20, retryMs: 5 })]);
    publishConfig(s, controlPlaneConfig({ type: "worker" }));
    put(s, K8S_NS, KubeletConfigType.type, "kubelet", { image: "kubelet" });
    files.addFile("/var/lib/kubelet/pki/kubelet-client-current.pem", "C");
    files.addFile("/etc/kubernetes/kubeconfig-kubelet", kubeletKubeconfig("https://127.0.0.1:7445"));
    await eventually(() => clients.length === 1, WAIT, "client");
    expect(clients[0].kubeconfig).toContain("server: https://127.0.0.1:7445");
    cluster.put(ENDPOINTSLICES, { metadata: { name: "kubernetes", namespace: "default" }, addressType: "IPv6", endpoints: [{ addresses: ["fd00::2"] }] });
    await eventually(() => !!spec(s, CONTROLPLANE_NS, EndpointType.type, "kube-apiserver"), WAIT, "endpoints");
    expect(spec(s, CONTROLPLANE_NS, EndpointType.type, "kube-apiserver")).toEqual({ addresses: ["fd00::2"], hosts: [] });
  });
});

describe("KubePrism", () => {
  it("runs a load balancer to the cluster endpoint where the config enables it, and stops it when disabled", async () => {
    // The "API server": a TCP server that answers with a greeting.
    const upstream = net.createServer((c) => {
      c.on("error", () => {});
      c.end("apiserver\n");
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
    const upstreamPort = (upstream.address() as net.AddressInfo).port;
    const started: LoadBalancer[] = [];
    // The configured port is 7445; tests take a free one instead.
    const balancer = async (o: LoadBalancerOptions) => {
      const lb = await TcpBalancer.start({ ...o, port: 0 });
      started.push(lb);
      return lb;
    };
    const s = new InMemoryState();
    startRuntime(s, [kubePrismEndpointsController(), kubePrismConfigController(), kubePrismController({ balancer, statusIntervalMs: 20, timing: { healthIntervalMs: 50, healthTimeoutMs: 500 } })]);
    const cfg = (enabled: boolean) =>
      controlPlaneConfig({ machineExtra: `  features:\n    kubePrism:\n      enabled: ${enabled}\n      port: 7445` }).replace("https://10.5.0.2:6443", `https://127.0.0.1:${upstreamPort}`);
    publishConfig(s, cfg(true));
    put(s, MemberType.defaultNamespace, MemberType.type, "cp2", { nodeId: "x", addresses: ["10.5.0.3"], hostname: "cp2", machineType: "controlplane", operatingSystem: "", controlPlane: { port: 6443 } });
    await eventually(() => spec<{ endpoints: unknown[] }>(s, K8S_NS, KubePrismEndpointsType.type, "k8s-cluster")?.endpoints.length === 3, WAIT, "endpoints");
    expect(spec(s, K8S_NS, KubePrismEndpointsType.type, "k8s-cluster")).toEqual({
      endpoints: [
        { host: "127.0.0.1", port: upstreamPort },
        { host: "localhost", port: 6443 },
        { host: "10.5.0.3", port: 6443 },
      ],
    });
    await eventually(() => !!spec(s, K8S_NS, KubePrismConfigType.type, "k8s-loadbalancer-config"), WAIT, "config");
    expect(spec(s, K8S_NS, KubePrismConfigType.type, "k8s-loadbalancer-config")).toMatchObject({ host: "127.0.0.1", port: 7445 });
    await new Promise((r) => setTimeout(r, 30));
    expect(started).toHaveLength(0); // no kubelet on this node: no Kubernetes, no load balancer

    put(s, K8S_NS, KubeletConfigType.type, "kubelet", { image: "kubelet" });
    await eventually(() => spec<KubePrismStatusesSpec>(s, K8S_NS, KubePrismStatusesType.type, "k8s-loadbalancer")?.healthy === true, WAIT, "healthy status");
    const lb = started[0];
    expect(spec(s, K8S_NS, KubePrismStatusesType.type, "k8s-loadbalancer")).toEqual({ host: lb.endpoint, healthy: true });
    // The test upstream listens on 127.0.0.1 only; the others are unreachable here, so every connection ends up on it.
    const port = Number(lb.endpoint.split(":").pop());
    const greet = () =>
      new Promise<string>((resolve) => {
        const c = net.connect({ host: "127.0.0.1", port });
        let got = "";
        c.on("data", (d) => (got += d.toString()));
        c.on("error", () => {});
        c.on("close", () => resolve(got));
      });
    let reached = false;
    for (let i = 0; i < 50 && !reached; i++) reached = (await greet()) === "apiserver\n";
    expect(reached).toBe(true);

    publishConfig(s, cfg(false));
    await eventually(() => s.list(K8S_NS, KubePrismStatusesType.type).length === 0, WAIT, "status removed");
    await expect(greet()).resolves.toBe("");
    await new Promise<void>((r) => upstream.close(() => r()));
  });

  it("the wiring list names every controller once", () => {
    expect(kubernetesStatusControllers().map((c) => c.name)).toEqual([
      "k8s.NodeIPConfigController",
      "k8s.NodeIPController",
      "k8s.NodeStatusController",
      "k8s.NodeLabelSpecController",
      "k8s.NodeAnnotationSpecController",
      "k8s.NodeTaintSpecController",
      "k8s.NodeCordonedSpecController",
      "k8s.NodeApplyController",
      "k8s.KubeletStaticPodController",
      "k8s.StaticEndpointController",
      "k8s.EndpointController",
      "k8s.KubePrismEndpointsController",
      "k8s.KubePrismConfigController",
      "k8s.KubePrismController",
    ]);
  });
});
