/**
 * The Kubernetes checks of `talosctl health` against an in-memory Kubernetes API: a healthy cluster passes
 * them all, each one fails naming the component that is not there or not ready, the skip rules are upstream's
 * (CNI none, no kube-proxy DaemonSet, no CoreDNS Deployment), and polling and deadlines run on a fake clock.
 */
import { describe, expect, it } from "vitest";
import type { KubeApi } from "../../../src/host/kube/api.js";
import { MemoryKubeApi } from "../../../src/host/kube/memory.js";
import { K8S_CHECK_NAMES } from "../../../src/lifecycle/health/checks.js";
import { kubernetesChecks, nodesMatch, NO_KUBERNETES, type KubernetesCheckEnv } from "../../../src/lifecycle/health/kubernetes.js";
import { clusterInfoFromKubernetesNodes, clusterInfoFromLists } from "../../../src/lifecycle/health/nodes.js";
import { dedupReporter, SkipCheck, waitChecks } from "../../../src/lifecycle/health/wait.js";
import { ApiError, Code } from "../../../src/machinery/errors.js";
import { DAEMONSETS, DEPLOYMENTS, NODES, PODS } from "../../../src/machinery/kubernetes/objects.js";
import { K8S_NS, KubeletConfigType, StaticPodStatusType } from "../../../src/machinery/resources/types/k8s.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { CP, healthyCluster, k8sNode, kubernetesNodeState, pod, stateNode, WORKER } from "./fixture.js";

function fakeClock(start = 0) {
  const c = { t: start, now: () => c.t, sleep: async (ms: number) => void (c.t += ms) };
  return c;
}

function setup(opts: { cni?: string; cluster?: MemoryKubeApi } = {}) {
  const state = new InMemoryState();
  kubernetesNodeState(state, opts.cni);
  const api = opts.cluster ?? healthyCluster();
  const env: KubernetesCheckEnv = {
    state,
    cluster: clusterInfoFromLists([CP], [WORKER]),
    node: stateNode(state, (ip) => ip === CP),
    kubernetes: async () => api,
  };
  const run = (name: string) => kubernetesChecks(env).find((c) => c.name === name)!.run(new AbortController().signal);
  return { state, api, env, run };
}

describe("Kubernetes checks", () => {
  it("come in upstream's order and pass on a healthy cluster", async () => {
    const { env } = setup();
    expect(kubernetesChecks(env).map((c) => c.name)).toEqual(K8S_CHECK_NAMES);
    expect(kubernetesChecks(env).map((c) => c.intervalMs)).toEqual([30_000, 5_000, 5_000, 5_000, 5_000, 5_000, 5_000]);
    const lines: string[] = [];
    await waitChecks(kubernetesChecks(env), dedupReporter((l) => void lines.push(l)), { deadline: 60_000, ...fakeClock() });
    expect(lines.filter((l) => !l.endsWith(": ..."))).toEqual(K8S_CHECK_NAMES.map((n) => `waiting for ${n}: OK`));
  });

  it("all k8s nodes to report: the expected nodes, no more, no fewer", async () => {
    const { api, run } = setup();
    api.remove(NODES, "worker-1");
    await expect(run("all k8s nodes to report")).rejects.toThrow(`can't find expected node with IPs ["${WORKER}"]`);
    api.put(NODES, k8sNode("worker-1", WORKER));
    api.put(NODES, k8sNode("stray", "10.5.0.9"));
    await expect(run("all k8s nodes to report")).rejects.toThrow('unexpected nodes with IPs ["10.5.0.9"]');
    api.put(NODES, { ...k8sNode("stray", "10.5.0.9"), status: { addresses: [{ type: "InternalIP", address: "not-an-ip" }] } });
    await expect(run("all k8s nodes to report")).rejects.toThrow('ParseAddr("not-an-ip"): unable to parse IP');
    expect(() => nodesMatch([], [])).not.toThrow();
  });

  it("all control plane static pods to be running: names the missing pods and the node", async () => {
    const { state, env, run } = setup();
    state.destroy({ namespace: K8S_NS, type: StaticPodStatusType.type, id: "kube-system/kube-scheduler-cp-1" }, "");
    state.destroy({ namespace: K8S_NS, type: StaticPodStatusType.type, id: "kube-system/kube-apiserver-cp-1" }, "");
    await expect(run("all control plane static pods to be running")).rejects.toThrow(
      `missing static pods on node ${CP}: [kube-system/kube-apiserver kube-system/kube-scheduler]`,
    );
    const remote = { ...env, cluster: clusterInfoFromLists(["10.5.0.7"], []) };
    await expect(kubernetesChecks(remote)[1].run(new AbortController().signal)).rejects.toThrow(
      'error listing static pods on node 10.5.0.7: node "10.5.0.7" is not reachable',
    );
  });

  it("all control plane components to be ready: control plane Nodes, pod counts and readiness per component", async () => {
    const { api, run } = setup();
    const name = "all control plane components to be ready";
    api.put(PODS, pod("kube-scheduler-cp-1", "kube-scheduler", { ready: "False" }));
    await expect(run(name)).rejects.toThrow("some pods are not ready for kube-scheduler: [kube-scheduler-cp-1]");
    api.put(PODS, pod("kube-scheduler-cp-1", "kube-scheduler"));
    api.remove(PODS, "kube-controller-manager-cp-1", "kube-system");
    await expect(run(name)).rejects.toThrow("expected number of pods for kube-controller-manager to be 1, got 0");
    // A pod checkpoint does not count.
    api.put(PODS, pod("kube-controller-manager-cp-1", "kube-controller-manager", { annotations: { "checkpointer.alpha.coreos.com/checkpoint-of": "x" } }));
    await expect(run(name)).rejects.toThrow("expected number of pods for kube-controller-manager to be 1, got 0");
    api.put(PODS, pod("kube-controller-manager-cp-1", "kube-controller-manager"));
    await expect(run(name)).resolves.toBeUndefined();
    api.put(NODES, k8sNode("cp-1", CP));
    await expect(run(name)).rejects.toThrow(`can't find expected node with IPs ["${CP}"]`);
    api.put(NODES, k8sNode("cp-1", CP, { controlPlane: true }));
    api.put(DAEMONSETS, { metadata: { name: "kube-apiserver", namespace: "kube-system", labels: { "k8s-app": "kube-apiserver" } }, status: { desiredNumberScheduled: 1, currentNumberScheduled: 0 } });
    await expect(run(name)).rejects.toThrow("expected current number scheduled for kube-apiserver to be 1, got 0");
  });

  it("all k8s nodes to report ready: names the nodes; skipped without a CNI", async () => {
    const { api, run } = setup();
    api.put(NODES, k8sNode("worker-1", WORKER, { ready: "False" }));
    await expect(run("all k8s nodes to report ready")).rejects.toThrow("some nodes are not ready: [worker-1]");
    const none = setup({ cni: "none", cluster: api });
    await expect(none.run("all k8s nodes to report ready")).rejects.toBeInstanceOf(SkipCheck);
    none.state.destroy({ namespace: "controlplane", type: "BootstrapManifestsConfigs.kubernetes.talos.dev", id: "manifests" }, "");
    await expect(none.run("all k8s nodes to report ready")).rejects.toThrow(
      "resource BootstrapManifestsConfigs.kubernetes.talos.dev(controlplane/manifests@undefined) doesn't exist",
    );
  });

  it("kube-proxy to report ready: the DaemonSet's desired pods Ready; skipped without the DaemonSet", async () => {
    const { api, run } = setup();
    const name = "kube-proxy to report ready";
    api.put(PODS, pod("kube-proxy-b", "kube-proxy", { ready: "False" }));
    await expect(run(name)).rejects.toThrow("some pods are not ready: [kube-proxy-b]");
    // Deleted, failed and completed pods are ignored.
    api.put(PODS, pod("kube-proxy-b", "kube-proxy", { ready: "False", deleting: true }));
    api.put(PODS, pod("kube-proxy-c", "kube-proxy", { ready: "False", phase: "Failed" }));
    api.put(PODS, pod("kube-proxy-d", "kube-proxy", { ready: "False", terminated: true }));
    await expect(run(name)).rejects.toThrow("expected 2 ready pods, got 1");
    api.remove(DAEMONSETS, "kube-proxy", "kube-system");
    await expect(run(name)).rejects.toBeInstanceOf(SkipCheck);
  });

  it("coredns to report ready: the Deployment's replicas Ready; skipped without the Deployment or a CNI", async () => {
    const { api, run } = setup();
    const name = "coredns to report ready";
    for (const p of ["coredns-a", "coredns-b"]) api.remove(PODS, p, "kube-system");
    await expect(run(name)).rejects.toThrow('no pods found for namespace "kube-system" and label selector "k8s-app=kube-dns"');
    api.put(PODS, pod("coredns-a", "kube-dns", { ready: "False" }));
    await expect(run(name)).rejects.toThrow('no ready pods found for namespace "kube-system" and label selector "k8s-app=kube-dns"');
    await expect(setup({ cni: "none", cluster: api }).run(name)).rejects.toBeInstanceOf(SkipCheck);
    api.remove(DEPLOYMENTS, "coredns", "kube-system");
    await expect(run(name)).rejects.toBeInstanceOf(SkipCheck);
  });

  it("all k8s nodes to report schedulable: names a cordoned node", async () => {
    const { api, run } = setup();
    api.put(NODES, k8sNode("worker-1", WORKER, { unschedulable: true }));
    await expect(run("all k8s nodes to report schedulable")).rejects.toThrow("some nodes are not schedulable: [worker-1]");
  });

  it("an unreachable API or a missing kubeconfig fails the check with the reason; a node without Kubernetes skips", async () => {
    const { api, env, run, state } = setup();
    api.down(new Error('Get "https://10.5.0.2:6443/api/v1/nodes": dial tcp 10.5.0.2:6443: connect: connection refused'));
    await expect(run("all k8s nodes to report")).rejects.toThrow("dial tcp 10.5.0.2:6443: connect: connection refused");
    const noClient = { ...env, kubernetes: async () => Promise.reject(new Error("error getting kubeconfig: resource KubernetesSecrets.secrets.talos.dev(secrets/k8s-certs@undefined) doesn't exist")) };
    await expect(kubernetesChecks(noClient)[0].run(new AbortController().signal)).rejects.toThrow("error getting kubeconfig");
    state.destroy({ namespace: K8S_NS, type: KubeletConfigType.type, id: "kubelet" }, "");
    for (const c of kubernetesChecks(env)) {
      const e = await c.run(new AbortController().signal).catch((x) => x);
      expect(e).toBeInstanceOf(SkipCheck);
      expect(e.message).toBe(`SKIP (${NO_KUBERNETES})`);
    }
  });

  it("polls each check at its interval until the deadline, on a fake clock", async () => {
    const { api, env } = setup();
    api.remove(NODES, "worker-1");
    const clock = fakeClock();
    const lines: string[] = [];
    const err = await waitChecks(kubernetesChecks(env), dedupReporter((l) => void lines.push(l)), { deadline: 100_000, ...clock }).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.code).toBe(Code.DeadlineExceeded);
    expect(err.message).toBe(`context deadline exceeded: waiting for all k8s nodes to report: can't find expected node with IPs ["${WORKER}"]`);
    // Attempts at 0, 30, 60 and 90 s (one list each), then the deadline.
    expect(api.requests).toBe(4);
    expect(clock.t).toBe(100_000);
    expect(lines).toEqual(["waiting for all k8s nodes to report: ...", `waiting for all k8s nodes to report: can't find expected node with IPs ["${WORKER}"]`]);
  });

  it("an attempt that hangs is cancelled after its interval and counts as a timeout", async () => {
    const { env } = setup();
    let aborted = 0;
    const hanging = {
      server: "https://10.5.0.2:6443",
      list: (_k: unknown, _o: unknown, signal?: AbortSignal) =>
        new Promise((_, reject) => signal?.addEventListener("abort", () => (aborted++, reject(new Error("aborted"))))),
      watch: () => new Promise(() => {}),
      close: async () => {},
    } as unknown as KubeApi;
    const lines: string[] = [];
    const clock = fakeClock();
    const err = await waitChecks(kubernetesChecks({ ...env, kubernetes: async () => hanging }).slice(0, 1), dedupReporter((l) => void lines.push(l)), {
      deadline: 150,
      intervalMs: 50,
      ...clock,
    }).catch((e) => e);
    expect(err.message).toBe("context deadline exceeded: waiting for all k8s nodes to report: context deadline exceeded");
    expect(aborted).toBeGreaterThanOrEqual(1);
  });

  it("builds the node list from Kubernetes Nodes as the last resort", () => {
    const info = clusterInfoFromKubernetesNodes([k8sNode("cp-1", CP, { controlPlane: true }), k8sNode("worker-1", WORKER)]);
    expect(info.byType.controlplane.map((n) => n.internalIP)).toEqual([CP]);
    expect(info.byType.worker.map((n) => n.internalIP)).toEqual([WORKER]);
    expect(info.nodes.map((n) => n.ips)).toEqual([[CP], [WORKER]]);
  });
});
