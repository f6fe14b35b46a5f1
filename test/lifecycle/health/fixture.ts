/** A healthy two-node cluster (control plane 10.5.0.2, worker 10.5.0.3) in MemoryKubeApi, and the node state the checks read. */
import { MemoryKubeApi } from "../../../src/host/kube/memory.js";
import {
  DAEMONSETS,
  DEPLOYMENTS,
  NODES,
  PODS,
  type NodeObject,
  type PodObject,
} from "../../../src/machinery/kubernetes/objects.js";
import { newResource } from "../../../src/machinery/resources/resource.js";
import { K8S_NS, KubeletConfigType, StaticPodStatusType } from "../../../src/machinery/resources/types/k8s.js";
import { BOOTSTRAP_MANIFESTS_CONFIG } from "../../../src/lifecycle/health/kubernetes.js";
import type { InMemoryState } from "../../../src/state/inmem.js";
import { localNodeReads, unreachableNodeReads, type NodeReads } from "../../../src/lifecycle/health/reads.js";

export const CP = "10.5.0.2";
export const WORKER = "10.5.0.3";

export function k8sNode(name: string, ip: string, opts: { controlPlane?: boolean; ready?: string; unschedulable?: boolean } = {}): NodeObject {
  return {
    metadata: { name, labels: opts.controlPlane ? { "node-role.kubernetes.io/control-plane": "" } : {} },
    spec: { unschedulable: opts.unschedulable },
    status: {
      addresses: [
        { type: "InternalIP", address: ip },
        { type: "Hostname", address: name },
      ],
      conditions: [{ type: "Ready", status: opts.ready ?? "True" }],
    },
  };
}

export function pod(name: string, app: string, opts: { ready?: string; phase?: string; terminated?: boolean; deleting?: boolean; annotations?: Record<string, string> } = {}): PodObject {
  return {
    metadata: {
      name,
      namespace: "kube-system",
      labels: { "k8s-app": app },
      annotations: opts.annotations,
      deletionTimestamp: opts.deleting ? "2026-01-01T00:00:00Z" : undefined,
    },
    status: {
      phase: opts.phase ?? "Running",
      conditions: [{ type: "Ready", status: opts.ready ?? "True" }],
      containerStatuses: [{ name: app, state: opts.terminated ? { terminated: { exitCode: 0 } } : { running: {} } }],
    },
  };
}

export function healthyCluster(): MemoryKubeApi {
  const api = new MemoryKubeApi();
  api.put(NODES, k8sNode("cp-1", CP, { controlPlane: true }));
  api.put(NODES, k8sNode("worker-1", WORKER));
  for (const app of ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]) api.put(PODS, pod(`${app}-cp-1`, app));
  api.put(DAEMONSETS, { metadata: { name: "kube-proxy", namespace: "kube-system", labels: { "k8s-app": "kube-proxy" } }, status: { desiredNumberScheduled: 2 } });
  api.put(PODS, pod("kube-proxy-a", "kube-proxy"));
  api.put(PODS, pod("kube-proxy-b", "kube-proxy"));
  api.put(DEPLOYMENTS, { metadata: { name: "coredns", namespace: "kube-system", labels: { "k8s-app": "kube-dns" } }, spec: { replicas: 2 } });
  api.put(PODS, pod("coredns-a", "kube-dns"));
  api.put(PODS, pod("coredns-b", "kube-dns"));
  return api;
}

/** KubeletConfig (this node runs Kubernetes), the bootstrap manifests' CNI and the three static pods. */
export function kubernetesNodeState(s: InMemoryState, cni = "flannel"): void {
  const put = (ns: string, type: string, id: string, spec: unknown) => s.apply(newResource({ namespace: ns, type, id }, spec), "");
  put(K8S_NS, KubeletConfigType.type, "kubelet", { image: "ghcr.io/siderolabs/kubelet:v1.37.2" });
  put(BOOTSTRAP_MANIFESTS_CONFIG.namespace, BOOTSTRAP_MANIFESTS_CONFIG.type, BOOTSTRAP_MANIFESTS_CONFIG.id, { cniName: cni });
  for (const c of ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]) {
    put(K8S_NS, StaticPodStatusType.type, `kube-system/${c}-cp-1`, { phase: "Running", conditions: [{ type: "Ready", status: "True" }] });
  }
}

/** The node function of a check env: `local` reads this state, every other address cannot be asked. */
export function stateNode(s: InMemoryState, local: (ip: string) => boolean = () => true): (ip: string) => NodeReads {
  const reads = localNodeReads({ state: s, platformMode: "metal", memTotalKiB: async () => 8 * 1024 * 1024 });
  return (ip) => (local(ip) ? reads : unreachableNodeReads(ip, "not asked in this test"));
}
