/**
 * The cluster health checks of `talosctl health`, in upstream's order and with upstream's names and
 * messages, evaluated from this node's own state. machined does not forward requests, so a check that
 * needs another node reports that node as unreachable. The Kubernetes checks (kubernetes.ts) read the
 * cluster through the Kubernetes API.
 */
import type { MachineConfig } from "../../machinery/config/index.js";
import type { Pointer } from "../../machinery/resources/resource.js";
import { VolumeStatusType } from "../../machinery/resources/types/block.js";
import { EtcdMemberType } from "../../machinery/resources/types/etcd.js";
import { K8S_NS, KubeletConfigType } from "../../machinery/resources/types/k8s.js";
import { MachineStatusType, ServiceType, STAGES } from "../../machinery/resources/types/runtime.js";
import { DiagnosticType } from "../../machinery/resources/types/security.js";
import { pointer, read, readAll, readSpec } from "../../machinery/resources/read.js";
import type { State } from "../../state/types.js";
import { machineConfig } from "../../machinery/resources/types/config.js";
import type { ClusterInfo, NodeInfo, NodeType } from "./nodes.js";
import { SkipCheck, type ClusterCheck } from "./wait.js";
import { kubernetesChecks, type KubernetesCheckEnv } from "./kubernetes.js";

export interface EtcdMemberView {
  id: string;
  hostname: string;
  peerUrls: string[];
  isLearner: boolean;
}

export interface CheckEnv {
  state: Pick<State, "get" | "list">;
  cluster: ClusterInfo;
  /** True when the address designates this node. */
  isLocal(ip: string): boolean;
  /** This node runs in container mode: memory and disk sizes are not checked (as upstream). */
  containerMode?: boolean;
  /** MemTotal of /proc/meminfo in KiB. */
  memTotalKiB: () => Promise<number>;
  /** The local etcd member list (EtcdClient); without it the EtcdMember resource is used. */
  etcdMembers?: () => Promise<EtcdMemberView[]>;
  /** False when this node does not run etcd at all (etcd checks skip). */
  etcdRuns?: () => boolean;
  /** The Kubernetes client of this run (built once from the admin kubeconfig); without it the Kubernetes checks fail. */
  kubernetes?: KubernetesCheckEnv["kubernetes"];
}

const MiB = 1024 * 1024;
/** Minimum memory per machine type (Talos minimal.Memory: recommended minimum minus 150 MiB for the kernel). */
const MIN_MEMORY: Record<NodeType, number> = { init: (1848 - 150) * MiB, controlplane: (1848 - 150) * MiB, worker: (1024 - 150) * MiB };
/** 6 GiB minimal disk minus the UKI EFI (100 + 1 + 2000 MiB), STATE (100), META (1) and 10 MiB of GPT overhead. */
export const MIN_EPHEMERAL_BYTES = 6 * 1024 * MiB - (2101 + 100 + 1 + 10) * MiB;

const sorted = (l: string[]) => [...l].sort();
const ips = (nodes: NodeInfo[]) => nodes.map((n) => n.internalIP);

/** go-multierror's rendering of several errors. */
export function multiError(errs: string[]): Error | undefined {
  if (errs.length === 0) return undefined;
  const head = errs.length === 1 ? "1 error occurred:" : `${errs.length} errors occurred:`;
  return new Error(`${head}\n\t* ${errs.join("\n\t* ")}\n\n`);
}

export function unreachable(node: string): string {
  return `node ${JSON.stringify(node)} is not reachable: machined does not forward requests to other nodes`;
}

/** IEC size as go-humanize IBytes prints it ("3.8 GiB"). */
export function iBytes(n: number): string {
  if (n < 10) return `${n} B`;
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  const e = Math.min(Math.floor(Math.log(n) / Math.log(1024)), units.length - 1);
  const val = Math.floor((n / 1024 ** e) * 10 + 0.5) / 10;
  return `${val < 10 ? val.toFixed(1) : val.toFixed(0)} ${units[e]}`;
}

function missing(p: Pointer): string {
  return `resource ${p.type}(${p.namespace}/${p.id}@undefined) doesn't exist`;
}

function etcdDisabled(env: CheckEnv): boolean {
  if (env.etcdRuns?.() === false) return true;
  const cfg: MachineConfig | undefined = machineConfig(env.state);
  return !cfg?.cluster?.etcd?.ca?.crt;
}

function controlPlanes(env: CheckEnv): NodeInfo[] {
  return [...env.cluster.byType.init, ...env.cluster.byType.controlplane];
}

async function serviceHealth(env: CheckEnv, service: string, nodes: NodeInfo[]): Promise<void> {
  const errs: string[] = [];
  for (const node of sorted(ips(nodes))) {
    if (!env.isLocal(node)) throw new Error(`error getting service info for service ${JSON.stringify(service)} from node ${JSON.stringify(node)}: ${unreachable(node)}`);
    const svc = readSpec(env.state, ServiceType, service);
    if (!svc?.running) errs.push(`${node}: service ${JSON.stringify(service)} not in expected state "Running": service is not running`);
    else if (!svc.healthy) errs.push(`${node}: service is not healthy: ${service}`);
  }
  const err = multiError(errs);
  if (err) throw err;
}

/** The etcd member list as seen from `node` (only this node can be asked). */
async function memberList(env: CheckEnv, node: string): Promise<EtcdMemberView[]> {
  const fail = (why: string) => new Error(`error getting etcd member list from node ${JSON.stringify(node)}: ${why}`);
  if (!env.isLocal(node)) throw fail(unreachable(node));
  if (env.etcdMembers) return env.etcdMembers();
  const local = read(env.state, EtcdMemberType, "local");
  if (!local) throw fail("etcd is not running or not healthy on this node yet");
  return [{ id: local.spec.memberID, hostname: node, peerUrls: [], isLearner: false }];
}

const etcdHealthy = (env: CheckEnv): ClusterCheck => ({
  name: "etcd to be healthy",
  run: async () => {
    if (etcdDisabled(env)) throw new SkipCheck();
    await serviceHealth(env, "etcd", controlPlanes(env));
  },
});

const etcdConsistent = (env: CheckEnv): ClusterCheck => ({
  name: "etcd members to be consistent across nodes",
  run: async () => {
    if (etcdDisabled(env)) throw new SkipCheck();
    const lists: { node: string; members: EtcdMemberView[] }[] = [];
    for (const node of sorted(ips(controlPlanes(env)))) lists.push({ node, members: await memberList(env, node) });
    const key = (m: EtcdMemberView) => `${m.hostname}/${m.id}/${m.isLearner}`;
    const known = new Set((lists[0]?.members ?? []).map(key));
    for (const { node, members } of lists.slice(1)) {
      if (members.length !== known.size) {
        const expected = (lists[0]?.members ?? []).map((m) => m.hostname);
        throw new Error(`${node}: expected to have [${expected.join(" ")}] members, got [${members.map((m) => m.hostname).join(" ")}]`);
      }
      const unexpected = members.find((m) => !known.has(key(m)));
      if (unexpected) throw new Error(`${node}: found unexpected etcd member ${unexpected.hostname}`);
    }
  },
});

const etcdControlPlanes = (env: CheckEnv): ClusterCheck => ({
  name: "etcd members to be control plane nodes",
  run: async () => {
    if (etcdDisabled(env)) throw new SkipCheck();
    const nodes = controlPlanes(env);
    const local = ips(nodes).find((n) => env.isLocal(n)) ?? ips(nodes)[0];
    if (local === undefined) return;
    const members = await memberList(env, local);
    const memberIPs = members.flatMap((m) => m.peerUrls.map((u) => new URL(u).hostname.replace(/^\[|\]$/g, "")));
    const cpIPs = nodes.flatMap((n) => n.ips);
    // In local mode etcd advertises loopback; that address belongs to the (local) control plane too.
    const isLoopback = (ip: string) => ip === "::1" || ip.startsWith("127.");
    const localIsControlPlane = ips(nodes).some((n) => env.isLocal(n));
    if (!memberIPs.every((ip) => cpIPs.includes(ip) || (localIsControlPlane && isLoopback(ip)))) {
      throw new Error(`etcd member ips ${JSON.stringify(memberIPs)} are not subset of control plane node ips ${JSON.stringify(cpIPs)}`);
    }
  },
});

const apidReady = (env: CheckEnv): ClusterCheck => ({
  name: "apid to be ready",
  run: async () => {
    const errs = ips(env.cluster.nodes)
      .filter((n) => !env.isLocal(n))
      .map((n) => `error getting version from node ${JSON.stringify(n)}: ${unreachable(n)}`);
    if (errs.length > 0) throw new Error(errs.join("\n"));
  },
});

/** Nodes whose size checks apply: every node but this one in container mode. Remote nodes fail. */
function sizedNodes(env: CheckEnv): string[] {
  const nodes = ips(env.cluster.nodes);
  const remote = nodes.filter((n) => !env.isLocal(n));
  if (remote.length > 0) throw new Error(remote.map((n) => `error getting version from node ${JSON.stringify(n)}: ${unreachable(n)}`).join("\n"));
  return env.containerMode ? [] : nodes;
}

function nodeType(env: CheckEnv, ip: string): NodeType {
  for (const t of ["init", "controlplane", "worker"] as const) if (env.cluster.byType[t].some((n) => n.internalIP === ip)) return t;
  return "worker";
}

const memorySizes = (env: CheckEnv): ClusterCheck => ({
  name: "all nodes memory sizes",
  run: async () => {
    const errs: string[] = [];
    for (const node of sizedNodes(env)) {
      const total = (await env.memTotalKiB()) * 1024;
      const min = MIN_MEMORY[nodeType(env, node)];
      if (total < min) {
        errs.push(
          `node ${JSON.stringify(node)} does not meet memory requirements: expected at least ${Math.floor(min / MiB)} MiB, actual ${Math.floor(total / MiB)} MiB`,
        );
      }
    }
    const err = multiError(errs);
    if (err) throw err;
  },
});

const diskSizes = (env: CheckEnv): ClusterCheck => ({
  name: "all nodes disk sizes",
  run: async () => {
    const errs: string[] = [];
    for (const node of sorted(sizedNodes(env))) {
      const ptr = pointer(VolumeStatusType, "EPHEMERAL");
      const vs = readSpec(env.state, VolumeStatusType, ptr.id);
      if (!vs) {
        errs.push(`error getting volume status for node ${JSON.stringify(node)}: ${missing(ptr)}`);
        continue;
      }
      const size = vs.size ?? 0;
      if (size < MIN_EPHEMERAL_BYTES) {
        errs.push(
          `ephemeral partition ${JSON.stringify(vs.location ?? "")} for node ${JSON.stringify(node)} is too small, expected at least ${iBytes(MIN_EPHEMERAL_BYTES)}, actual ${iBytes(size)}`,
        );
      }
    }
    const err = multiError(errs);
    if (err) throw err;
  },
});

const noDiagnostics = (env: CheckEnv): ClusterCheck => ({
  name: "no diagnostics",
  run: async () => {
    const byNode: string[] = [];
    for (const node of sorted(ips(env.cluster.nodes))) {
      if (!env.isLocal(node)) throw new Error(unreachable(node));
      const msgs = readAll(env.state, DiagnosticType).map((r) => r.spec.message);
      if (msgs.length > 0) byNode.push(`${node}: ${msgs.join(", ")}`);
    }
    if (byNode.length > 0) throw new Error(`active diagnostics: ${byNode.join("; ")}`);
  },
});

const kubeletHealthy = (env: CheckEnv): ClusterCheck => ({
  name: "kubelet to be healthy",
  run: async () => {
    if (!env.state.get({ namespace: K8S_NS, type: KubeletConfigType.type, id: "kubelet" })) throw new SkipCheck();
    await serviceHealth(env, "kubelet", controlPlanes(env));
  },
});

const booted = (env: CheckEnv): ClusterCheck => ({
  name: "all nodes to finish boot sequence",
  run: async () => {
    const byStage = new Map<number, string[]>();
    for (const node of ips(env.cluster.nodes)) {
      if (!env.isLocal(node)) throw new Error(`error watching machine ${node} status: ${unreachable(node)}`);
      const ms = readSpec(env.state, MachineStatusType, "machine");
      // Upstream waits for the running stage (readiness is not part of this check).
      const stage = STAGES.indexOf(ms?.stage ?? "unknown");
      if (stage !== STAGES.indexOf("running")) byStage.set(stage, [...(byStage.get(stage) ?? []), node]);
    }
    if (byStage.size === 0) return;
    const parts = [...byStage.keys()].sort((a, b) => a - b).map((s) => `${STAGES[s]}: [${sorted(byStage.get(s)!).join(" ")}]`);
    throw new Error(`nodes are not running: ${parts.join(", ")}`);
  },
});

export const K8S_CHECK_NAMES = [
  "all k8s nodes to report",
  "all control plane static pods to be running",
  "all control plane components to be ready",
  "all k8s nodes to report ready",
  "kube-proxy to report ready",
  "coredns to report ready",
  "all k8s nodes to report schedulable",
];

/** Upstream's DefaultClusterChecks: pre-boot checks, then the Kubernetes ones. */
export function defaultClusterChecks(env: CheckEnv): ClusterCheck[] {
  return [
    etcdHealthy(env),
    etcdConsistent(env),
    etcdControlPlanes(env),
    apidReady(env),
    memorySizes(env),
    diskSizes(env),
    noDiagnostics(env),
    kubeletHealthy(env),
    booted(env),
    ...kubernetesChecks(env),
  ];
}
