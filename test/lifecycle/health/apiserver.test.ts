/**
 * The Kubernetes checks and the watch-driven status controllers against a real kube-apiserver v1.37.2 (with
 * etcd 3.7.3), both host processes on loopback. There is no kubelet, so only what needs none is asserted:
 * the node list checks (zero nodes, then a Node created with kubectl), node readiness and cordoning, the control
 * plane check naming the missing pods, kube-proxy and CoreDNS skipped without their DaemonSet/Deployment as
 * upstream does; NodeStatus and the kube-apiserver Endpoints following real watches. Skips without the cached
 * binaries (make kube-images).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubeApi, type KubeApi } from "../../../src/host/kube/api.js";
import { MemoryFiles } from "../../../src/host/files/index.js";
import { endpointController } from "../../../src/controllers/k8s/endpoint.js";
import { nodeStatusController } from "../../../src/controllers/k8s/node-status.js";
import { kubernetesChecks, type KubernetesCheckEnv } from "../../../src/lifecycle/health/kubernetes.js";
import { clusterInfoFromLists } from "../../../src/lifecycle/health/nodes.js";
import { SkipCheck } from "../../../src/lifecycle/health/wait.js";
import { K8S_NS, KubeletConfigType, NodenameType, NodeStatusType, type NodeStatusSpec } from "../../../src/machinery/resources/types/k8s.js";
import { CONTROLPLANE_NS, EndpointType } from "../../../src/machinery/resources/types/k8s-status.js";
import { KubernetesCertsType, SECRETS_NS } from "../../../src/machinery/resources/types/secrets.js";
import { ExtKeyUsage, issueLeaf } from "../../../src/machinery/pki/index.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { controlPlaneConfig, eventually, publishConfig, put, spec, startRuntime } from "../../controllers/runtime/harness.js";
import { apiServerBinaries, startApiServer, type ApiServer } from "../../helpers/kube-apiserver.js";
import { kubernetesNodeState, stateNode } from "./fixture.js";

const bin = apiServerBinaries();
if (typeof bin === "string") console.log(`skipping the kube-apiserver tests: ${bin}`);

describe.skipIf(typeof bin === "string")("against a real kube-apiserver", () => {
  let apiserver: ApiServer;
  let api: KubeApi;

  beforeAll(async () => {
    apiserver = await startApiServer(bin as Exclude<typeof bin, string>);
    api = kubeApi(apiserver.kubeconfig);
  }, 120_000);

  afterAll(async () => {
    await api?.close();
    await apiserver?.stop();
  });

  const checksFor = (controlPlanes: string[]) => {
    const state = new InMemoryState();
    kubernetesNodeState(state);
    const env: KubernetesCheckEnv = { state, cluster: clusterInfoFromLists(controlPlanes, []), node: stateNode(state), kubernetes: async () => api };
    const run = async (name: string) => kubernetesChecks(env).find((c) => c.name === name)!.run(new AbortController().signal);
    return { state, run };
  };

  it("runs the Kubernetes checks: what can pass without a kubelet passes, the rest names what is missing", async () => {
    const none = checksFor([]);
    // No nodes expected, none registered.
    await expect(none.run("all k8s nodes to report")).resolves.toBeUndefined();
    // No kube-proxy DaemonSet and no CoreDNS Deployment: skipped, as upstream.
    await expect(none.run("kube-proxy to report ready")).rejects.toBeInstanceOf(SkipCheck);
    await expect(none.run("coredns to report ready")).rejects.toBeInstanceOf(SkipCheck);
    await expect(none.run("all k8s nodes to report schedulable")).resolves.toBeUndefined();

    const one = checksFor(["10.5.0.2"]);
    await expect(one.run("all k8s nodes to report")).rejects.toThrow('can\'t find expected node with IPs ["10.5.0.2"]');

    apiserver.kubectl(
      ["create", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: "cp-1", labels: { "node-role.kubernetes.io/control-plane": "" } },
        status: { addresses: [{ type: "InternalIP", address: "10.5.0.2" }], conditions: [{ type: "Ready", status: "False", reason: "KubeletNotReady", message: "no kubelet here" }] },
      }),
    );
    await expect(one.run("all k8s nodes to report")).resolves.toBeUndefined();
    await expect(one.run("all k8s nodes to report ready")).rejects.toThrow("some nodes are not ready: [cp-1]");
    await expect(one.run("all control plane components to be ready")).rejects.toThrow("expected number of pods for kube-apiserver to be 1, got 0");
    apiserver.kubectl(["cordon", "cp-1"]);
    await expect(one.run("all k8s nodes to report schedulable")).rejects.toThrow("some nodes are not schedulable: [cp-1]");
    apiserver.kubectl(["uncordon", "cp-1"]);
    await expect(one.run("all k8s nodes to report schedulable")).resolves.toBeUndefined();

    // A kube-proxy DaemonSet nothing schedules (no kubelet): the check no longer skips and says why it fails.
    apiserver.kubectl(
      ["create", "-f", "-"],
      JSON.stringify({
        apiVersion: "apps/v1",
        kind: "DaemonSet",
        metadata: { name: "kube-proxy", namespace: "kube-system", labels: { "k8s-app": "kube-proxy" } },
        spec: {
          selector: { matchLabels: { "k8s-app": "kube-proxy" } },
          template: { metadata: { labels: { "k8s-app": "kube-proxy" } }, spec: { containers: [{ name: "kube-proxy", image: "registry.k8s.io/kube-proxy:v1.37.2" }] } },
        },
      }),
    );
    await expect(one.run("kube-proxy to report ready")).rejects.toThrow('no pods found for namespace "kube-system" and label selector "k8s-app=kube-proxy"');

    // The API's own refusal comes through as the server words it.
    const nobody = await issueLeaf(apiserver.ca, { subject: { commonName: "nobody" }, extKeyUsage: [ExtKeyUsage.ClientAuth], validityMs: 3_600_000 });
    const b64 = (t: string) => Buffer.from(t).toString("base64");
    const weak = kubeApi(
      apiserver.kubeconfig
        .replace(/client-certificate-data: .*/, `client-certificate-data: ${b64(nobody.crt)}`)
        .replace(/client-key-data: .*/, `client-key-data: ${b64(nobody.key)}`),
    );
    const forbidden = checksFor([]);
    const env: KubernetesCheckEnv = { state: forbidden.state, cluster: clusterInfoFromLists([], []), node: stateNode(forbidden.state), kubernetes: async () => weak };
    await expect(kubernetesChecks(env)[0].run(new AbortController().signal)).rejects.toThrow(
      'nodes is forbidden: User "nobody" cannot list resource "nodes" in API group "" at the cluster scope',
    );
    await weak.close();
  }, 60_000);

  it("NodeStatus and the kube-apiserver Endpoints follow real watches", async () => {
    const s = new InMemoryState();
    // The admin kubeconfig stands in for the kubelet's: it can watch Nodes and EndpointSlices too.
    const files = new MemoryFiles().addFile("/etc/kubernetes/kubeconfig-kubelet", apiserver.kubeconfig);
    startRuntime(s, [nodeStatusController({ files, pollMs: 200, retryMs: 100 }), endpointController({ files, retryMs: 100 })]);
    publishConfig(s, controlPlaneConfig());
    put(s, K8S_NS, KubeletConfigType.type, "kubelet", { image: "kubelet" });
    put(s, K8S_NS, NodenameType.type, "nodename", { nodename: "watched-1", hostnameVersion: "1", skipNodeRegistration: false });
    put(s, SECRETS_NS, KubernetesCertsType.type, "k8s-certs", { adminKubeconfig: apiserver.kubeconfig, localhostAdminKubeconfig: "", schedulerKubeconfig: "", controllerManagerKubeconfig: "" });

    apiserver.kubectl(["create", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { name: "watched-1", labels: { zone: "a" } }, spec: { podCIDRs: ["10.244.1.0/24"], podCIDR: "10.244.1.0/24" } }));
    await eventually(() => !!spec(s, K8S_NS, NodeStatusType.type, "watched-1"), 30_000, "NodeStatus");
    expect(spec<NodeStatusSpec>(s, K8S_NS, NodeStatusType.type, "watched-1")).toMatchObject({ nodename: "watched-1", nodeReady: false, unschedulable: false, podCIDRs: ["10.244.1.0/24"] });
    expect(spec<NodeStatusSpec>(s, K8S_NS, NodeStatusType.type, "watched-1")?.labels.zone).toBe("a");
    apiserver.kubectl(["label", "node", "watched-1", "zone=b", "--overwrite"]);
    apiserver.kubectl(["cordon", "watched-1"]);
    await eventually(() => spec<NodeStatusSpec>(s, K8S_NS, NodeStatusType.type, "watched-1")?.unschedulable === true, 30_000, "cordon seen");
    expect(spec<NodeStatusSpec>(s, K8S_NS, NodeStatusType.type, "watched-1")?.labels.zone).toBe("b");
    apiserver.kubectl(["delete", "node", "watched-1"]);
    await eventually(() => s.list(K8S_NS, NodeStatusType.type).length === 0, 30_000, "NodeStatus removed");

    apiserver.kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        metadata: { name: "kubernetes", namespace: "default", labels: { "kubernetes.io/service-name": "kubernetes" } },
        addressType: "IPv4",
        endpoints: [{ addresses: ["10.5.0.3"] }, { addresses: ["10.5.0.2"] }],
        ports: [{ name: "https", port: 6443, protocol: "TCP" }],
      }),
    );
    await eventually(() => !!spec(s, CONTROLPLANE_NS, EndpointType.type, "kube-apiserver"), 30_000, "kube-apiserver endpoints");
    expect(spec(s, CONTROLPLANE_NS, EndpointType.type, "kube-apiserver")).toEqual({ addresses: ["10.5.0.2", "10.5.0.3"], hosts: [] });
  }, 90_000);
});
