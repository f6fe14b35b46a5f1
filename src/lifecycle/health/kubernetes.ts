/**
 * The Kubernetes checks of `talosctl health` (upstream pkg/cluster/check/kubernetes.go and default.go), in
 * upstream's order, with upstream's names, poll intervals, skip rules and error texts. They read the cluster
 * through the Kubernetes API (a client built once per health run from the node's admin kubeconfig) and each
 * control plane's static pod statuses through that node's reads (its own state, or its API through request
 * forwarding).
 */
import type { KubeApi } from "../../host/kube/api.js";
import { quoteList } from "../../machinery/format.js";
import {
  conditionStatus,
  DAEMONSETS,
  DEPLOYMENTS,
  LABEL_NODE_ROLE_CONTROL_PLANE,
  NODES,
  PODS,
  type DaemonSetObject,
  type DeploymentObject,
  type NodeObject,
  type PodObject,
} from "../../machinery/kubernetes/objects.js";
import { compareAddr, parseAddr } from "../../machinery/net/addr.js";
import type { Pointer } from "../../machinery/resources/resource.js";
import { K8S_NS, KubeletConfigType } from "../../machinery/resources/types/k8s.js";
import { BOOTSTRAP_MANIFESTS_CONFIG_ID, BootstrapManifestsConfigType } from "../../machinery/resources/types/k8s-manifests.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";
import type { State } from "../../state/types.js";
import { nodeInfo, type ClusterInfo, type NodeInfo } from "./nodes.js";
import { SkipCheck, type ClusterCheck } from "./wait.js";
import { errorText, missing, type NodeReads } from "./reads.js";

export interface KubernetesCheckEnv {
  state: Pick<State, "get" | "list">;
  cluster: ClusterInfo;
  /** What the checks read from the node with this address. */
  node(ip: string): NodeReads;
  /** The Kubernetes client of this run (built on first use, then reused); rejects while none can be built. */
  kubernetes?: () => Promise<KubeApi>;
}

/** Upstream's BootstrapManifestsConfig (`controlplane`/`manifests`): its cniName says whether a CNI is deployed. */
export const BOOTSTRAP_MANIFESTS_CONFIG: Pointer = pointer(BootstrapManifestsConfigType, BOOTSTRAP_MANIFESTS_CONFIG_ID);

/** Skipped only where this node runs no Kubernetes at all (no KubeletConfig: the kubelet check skips then too). */
export const NO_KUBERNETES = "this node does not run Kubernetes";

const CONTROL_PLANE_APPS = ["kube-apiserver", "kube-scheduler", "kube-controller-manager"];
const EXPECTED_STATIC_PODS = CONTROL_PLANE_APPS.map((a) => `kube-system/${a}`).sort();

function runsKubernetes(env: KubernetesCheckEnv): boolean {
  return env.state.get({ namespace: K8S_NS, type: KubeletConfigType.type, id: "kubelet" }) !== undefined;
}

async function client(env: KubernetesCheckEnv): Promise<KubeApi> {
  if (!env.kubernetes) throw new Error("no Kubernetes client: the admin kubeconfig is not available on this node");
  return env.kubernetes();
}

const controlPlanes = (env: KubernetesCheckEnv): NodeInfo[] => [...env.cluster.byType.init, ...env.cluster.byType.controlplane];

/** Upstream cluster.NodesMatch: every expected node shares an address with a distinct actual node, and none is left. */
export function nodesMatch(expected: NodeInfo[], actual: NodeInfo[]): void {
  const left = [...actual];
  for (const e of expected) {
    const at = left.findIndex((a) => a.ips.some((ip) => e.ips.includes(ip)));
    if (at < 0) throw new Error(`can't find expected node with IPs ${quoteList(e.ips)}`);
    left.splice(at, 1);
  }
  if (left.length > 0) {
    const unexpected = left.flatMap((n) => n.ips).sort((a, b) => compareAddr(parseAddr(a)!, parseAddr(b)!));
    throw new Error(`unexpected nodes with IPs ${quoteList(unexpected)}`);
  }
}

async function listNodes(env: KubernetesCheckEnv, signal: AbortSignal): Promise<NodeObject[]> {
  return (await (await client(env)).list<NodeObject>(NODES, {}, signal)).items;
}

const goList = (l: string[]) => `[${l.join(" ")}]`;

/** "all k8s nodes to report": the Kubernetes nodes are exactly the expected ones. */
export async function allNodesReported(env: KubernetesCheckEnv, signal: AbortSignal): Promise<void> {
  nodesMatch(env.cluster.nodes, (await listNodes(env, signal)).map(nodeInfo));
}

/** "all control plane static pods to be running": every control plane's kubelet runs the three static pods. */
export async function controlPlaneStaticPods(env: KubernetesCheckEnv, signal?: AbortSignal): Promise<void> {
  for (const node of controlPlanes(env)) {
    const ip = node.internalIP;
    let ids: string[];
    try {
      ids = await env.node(ip).staticPodIds(signal);
    } catch (err) {
      throw new Error(`error listing static pods on node ${ip}: ${errorText(err)}`);
    }
    const absent = EXPECTED_STATIC_PODS.filter((want) => !ids.some((id) => id.startsWith(want)));
    if (absent.length > 0) throw new Error(`missing static pods on node ${ip}: ${goList(absent)}`);
  }
}

/** "all control plane components to be ready": the control plane Nodes are the expected ones, each component's pods are there and Ready. */
export async function fullControlPlane(env: KubernetesCheckEnv, signal: AbortSignal): Promise<void> {
  const api = await client(env);
  const nodes = await listNodes(env, signal);
  const actual = nodes.filter((n) => Object.hasOwn(n.metadata?.labels ?? {}, LABEL_NODE_ROLE_CONTROL_PLANE)).map(nodeInfo);
  nodesMatch(controlPlanes(env), actual);
  // Only pre-0.9 self-hosted control planes had these DaemonSets.
  const dss = await api.list<DaemonSetObject>(DAEMONSETS, { namespace: "kube-system", labelSelector: `k8s-app in (${CONTROL_PLANE_APPS.join(",")})` }, signal);
  for (const ds of dss.items) {
    const st = ds.status ?? {};
    const [desired, name] = [st.desiredNumberScheduled ?? 0, ds.metadata?.name ?? ""];
    if ((st.currentNumberScheduled ?? 0) !== desired) throw new Error(`expected current number scheduled for ${name} to be ${desired}, got ${st.currentNumberScheduled ?? 0}`);
    if ((st.numberAvailable ?? 0) !== desired) throw new Error(`expected number available for ${name} to be ${desired}, got ${st.numberAvailable ?? 0}`);
    if ((st.numberReady ?? 0) !== desired) throw new Error(`expected number ready for ${name} to be ${desired}, got ${st.numberReady ?? 0}`);
  }
  for (const app of CONTROL_PLANE_APPS) {
    let pods: PodObject[];
    try {
      pods = (await api.list<PodObject>(PODS, { namespace: "kube-system", labelSelector: `k8s-app = ${app}` }, signal)).items;
    } catch (e) {
      throw new Error(`error listing pods for app ${app}: ${(e as Error).message}`);
    }
    pods = pods.filter((p) => !Object.hasOwn(p.metadata?.annotations ?? {}, "checkpointer.alpha.coreos.com/checkpoint-of"));
    if (pods.length !== actual.length) throw new Error(`expected number of pods for ${app} to be ${actual.length}, got ${pods.length}`);
    const notReady = pods.filter((p) => {
      const s = conditionStatus(p.status?.conditions, "Ready");
      return s !== undefined && s !== "True";
    });
    if (notReady.length > 0) throw new Error(`some pods are not ready for ${app}: ${goList(notReady.map((p) => p.metadata?.name ?? ""))}`);
  }
}

/** "all k8s nodes to report ready". */
export async function allNodesReady(env: KubernetesCheckEnv, signal: AbortSignal): Promise<void> {
  const notReady = (await listNodes(env, signal)).filter((n) => {
    const s = conditionStatus(n.status?.conditions, "Ready");
    return s !== undefined && s !== "True";
  });
  if (notReady.length > 0) throw new Error(`some nodes are not ready: ${goList(notReady.map((n) => n.metadata?.name ?? ""))}`);
}

/** "all k8s nodes to report schedulable": upstream names the first cordoned node only. */
export async function allNodesSchedulable(env: KubernetesCheckEnv, signal: AbortSignal): Promise<void> {
  const cordoned = (await listNodes(env, signal)).find((n) => n.spec?.unschedulable);
  if (cordoned) throw new Error(`some nodes are not schedulable: ${goList([cordoned.metadata?.name ?? ""])}`);
}

/** Upstream K8sPodReadyAssertion: at least one pod, deleted/failed/completed ones ignored, `replicas` Ready and none not Ready. */
export async function podsReady(env: KubernetesCheckEnv, replicas: number, namespace: string, labelSelector: string, signal: AbortSignal): Promise<void> {
  const pods = (await (await client(env)).list<PodObject>(PODS, { namespace, labelSelector }, signal)).items;
  if (pods.length === 0) throw new Error(`no pods found for namespace ${JSON.stringify(namespace)} and label selector ${JSON.stringify(labelSelector)}`);
  const ready: string[] = [];
  const notReady: string[] = [];
  for (const pod of pods) {
    if (pod.metadata?.deletionTimestamp) continue;
    if (pod.status?.phase === "Failed") continue;
    // `kubectl get pods` shows these as Completed (Running with every container terminated, e.g. after a kubelet shutdown).
    if ((pod.status?.containerStatuses ?? []).every((c) => c.state?.terminated != null)) continue;
    (conditionStatus(pod.status?.conditions, "Ready") === "True" ? ready : notReady).push(pod.metadata?.name ?? "");
  }
  if (ready.length === 0) throw new Error(`no ready pods found for namespace ${JSON.stringify(namespace)} and label selector ${JSON.stringify(labelSelector)}`);
  if (notReady.length > 0) throw new Error(`some pods are not ready: ${goList(notReady)}`);
  if (ready.length !== replicas) throw new Error(`expected ${replicas} ready pods, got ${ready.length}`);
}

/** The CNI of the bootstrap manifests is `none`: nodes cannot become Ready and CoreDNS cannot run until the user installs one. */
function cniDisabled(env: KubernetesCheckEnv): boolean {
  const bmc = readSpec(env.state, BootstrapManifestsConfigType, BOOTSTRAP_MANIFESTS_CONFIG_ID);
  if (!bmc) throw new Error(missing(BOOTSTRAP_MANIFESTS_CONFIG));
  return bmc.cniName === "none";
}

function check(env: KubernetesCheckEnv, name: string, intervalMs: number, run: (signal: AbortSignal) => Promise<void>): ClusterCheck {
  return {
    name,
    intervalMs,
    run: async (signal) => {
      if (!runsKubernetes(env)) throw new SkipCheck(NO_KUBERNETES);
      await run(signal);
    },
  };
}

/** The Kubernetes checks of DefaultClusterChecks, after the pre-boot ones. */
export function kubernetesChecks(env: KubernetesCheckEnv): ClusterCheck[] {
  return [
    // More time per attempt: the first one builds the client.
    check(env, "all k8s nodes to report", 30_000, (s) => allNodesReported(env, s)),
    check(env, "all control plane static pods to be running", 5_000, (s) => controlPlaneStaticPods(env, s)),
    check(env, "all control plane components to be ready", 5_000, (s) => fullControlPlane(env, s)),
    check(env, "all k8s nodes to report ready", 5_000, async (s) => {
      if (cniDisabled(env)) throw new SkipCheck();
      await allNodesReady(env, s);
    }),
    check(env, "kube-proxy to report ready", 5_000, async (s) => {
      const dss = (await (await client(env)).list<DaemonSetObject>(DAEMONSETS, { namespace: "kube-system", labelSelector: "k8s-app=kube-proxy" }, s)).items;
      if (dss.length === 0) throw new SkipCheck();
      await podsReady(env, dss[0].status?.desiredNumberScheduled ?? 0, "kube-system", "k8s-app=kube-proxy", s);
    }),
    check(env, "coredns to report ready", 5_000, async (s) => {
      if (cniDisabled(env)) throw new SkipCheck();
      const deps = (await (await client(env)).list<DeploymentObject>(DEPLOYMENTS, { namespace: "kube-system", labelSelector: "k8s-app=kube-dns" }, s)).items;
      if (deps.length === 0) throw new SkipCheck();
      await podsReady(env, deps[0].spec?.replicas ?? 0, "kube-system", "k8s-app=kube-dns", s);
    }),
    check(env, "all k8s nodes to report schedulable", 5_000, (s) => allNodesSchedulable(env, s)),
  ];
}
