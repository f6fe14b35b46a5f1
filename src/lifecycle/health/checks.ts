/**
 * The cluster health checks of `talosctl health`, in upstream's order and with upstream's names and
 * messages. As upstream's server-side check (which asks each node through apid with the node in the call
 * context), every node is read through a NodeReads (reads.ts): this node from its own state, another one
 * through request forwarding; several nodes are asked at once. The Kubernetes checks (kubernetes.ts) read
 * the cluster through the Kubernetes API.
 */
import type { MachineConfig } from "../../machinery/config/index.js";
import { Code } from "../../machinery/errors.js";
import { K8S_NS, KubeletConfigType } from "../../machinery/resources/types/k8s.js";
import { STAGES } from "../../machinery/resources/types/runtime.js";
import type { State } from "../../state/types.js";
import { machineConfig } from "../../machinery/resources/types/config.js";
import type { ClusterInfo, NodeInfo, NodeType } from "./nodes.js";
import { SkipCheck, type ClusterCheck } from "./wait.js";
import { kubernetesChecks, type KubernetesCheckEnv } from "./kubernetes.js";
import { errorText, readCode, type EtcdMemberView, type NodeReads } from "./reads.js";

export type { EtcdMemberView, NodeReads } from "./reads.js";

export interface CheckEnv {
  state: Pick<State, "get" | "list">;
  cluster: ClusterInfo;
  /** True when the address designates this node. */
  isLocal(ip: string): boolean;
  /** What the checks read from the node with this address (this node's state, or another node's API). */
  node(ip: string): NodeReads;
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

/** IEC size as go-humanize IBytes prints it ("3.8 GiB"). */
export function iBytes(n: number): string {
  if (n < 10) return `${n} B`;
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  const e = Math.min(Math.floor(Math.log(n) / Math.log(1024)), units.length - 1);
  const val = Math.floor((n / 1024 ** e) * 10 + 0.5) / 10;
  return `${val < 10 ? val.toFixed(1) : val.toFixed(0)} ${units[e]}`;
}

type Answer<T> = { node: string; ok: true; value: T } | { node: string; ok: false; error: unknown };

/** Asks every node at once (upstream's multiplex.Unary), answers in the order of `nodes`. */
async function ask<T>(env: CheckEnv, nodes: string[], read: (n: NodeReads) => Promise<T>): Promise<Answer<T>[]> {
  return Promise.all(
    nodes.map(async (node): Promise<Answer<T>> => {
      try {
        return { node, ok: true, value: await read(env.node(node)) };
      } catch (error) {
        return { node, ok: false, error };
      }
    }),
  );
}

function etcdDisabled(env: CheckEnv): boolean {
  if (env.etcdRuns?.() === false) return true;
  const cfg: MachineConfig | undefined = machineConfig(env.state);
  return !cfg?.cluster?.etcd?.ca?.crt;
}

function controlPlanes(env: CheckEnv): NodeInfo[] {
  return [...env.cluster.byType.init, ...env.cluster.byType.controlplane];
}

async function serviceHealth(env: CheckEnv, service: string, nodes: NodeInfo[], signal: AbortSignal): Promise<void> {
  const answers = await ask(env, sorted(ips(nodes)), (n) => n.service(service, signal));
  const failed = answers.find((a) => !a.ok);
  if (failed && !failed.ok) {
    throw new Error(`error getting service info for service ${JSON.stringify(service)} from node ${JSON.stringify(failed.node)}: ${errorText(failed.error)}`);
  }
  const errs: string[] = [];
  for (const a of answers) {
    if (!a.ok) continue;
    const svc = a.value;
    if (!svc?.running) errs.push(`${a.node}: service ${JSON.stringify(service)} not in expected state "Running": service is not running`);
    else if (!svc.healthy) errs.push(`${a.node}: service is not healthy: ${service}`);
  }
  const err = multiError(errs);
  if (err) throw err;
}

const memberListError = (node: string, err: unknown) => new Error(`error getting etcd member list from node ${JSON.stringify(node)}: ${errorText(err)}`);

const etcdHealthy = (env: CheckEnv): ClusterCheck => ({
  name: "etcd to be healthy",
  run: async (signal) => {
    if (etcdDisabled(env)) throw new SkipCheck();
    await serviceHealth(env, "etcd", controlPlanes(env), signal);
  },
});

const etcdConsistent = (env: CheckEnv): ClusterCheck => ({
  name: "etcd members to be consistent across nodes",
  run: async (signal) => {
    if (etcdDisabled(env)) throw new SkipCheck();
    const lists: { node: string; members: EtcdMemberView[] }[] = [];
    for (const a of await ask(env, sorted(ips(controlPlanes(env))), (n) => n.etcdMembers(signal))) {
      if (!a.ok) throw memberListError(a.node, a.error);
      lists.push({ node: a.node, members: a.value });
    }
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
  run: async (signal) => {
    if (etcdDisabled(env)) throw new SkipCheck();
    const nodes = controlPlanes(env);
    // Upstream asks the node it runs on (no node in the context); a cluster listed without it: the first control plane.
    const asked = ips(nodes).find((n) => env.isLocal(n)) ?? ips(nodes)[0];
    if (asked === undefined) return;
    let members: EtcdMemberView[];
    try {
      members = await env.node(asked).etcdMembers(signal);
    } catch (err) {
      throw memberListError(asked, err);
    }
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

const versionError = (node: string, err: unknown) => `error getting version from node ${JSON.stringify(node)}: ${errorText(err)}`;

const apidReady = (env: CheckEnv): ClusterCheck => ({
  name: "apid to be ready",
  run: async (signal) => {
    const errs = (await ask(env, ips(env.cluster.nodes), (n) => n.platformMode(signal))).flatMap((a) => (a.ok ? [] : [versionError(a.node, a.error)]));
    // errors.Join: one line each.
    if (errs.length > 0) throw new Error(errs.join("\n"));
  },
});

/** Upstream getNonContainerNodes: every node's Version; the ones not in container mode are size-checked. */
async function sizedNodes(env: CheckEnv, signal: AbortSignal): Promise<string[]> {
  const answers = await ask(env, ips(env.cluster.nodes), (n) => n.platformMode(signal));
  const errs = answers.flatMap((a) => (a.ok ? [] : [versionError(a.node, a.error)]));
  if (errs.length > 0) throw new Error(errs.join("\n"));
  return answers.flatMap((a) => (a.ok && a.value !== "container" ? [a.node] : []));
}

function nodeType(env: CheckEnv, ip: string): NodeType {
  for (const t of ["init", "controlplane", "worker"] as const) if (env.cluster.byType[t].some((n) => n.internalIP === ip)) return t;
  return "worker";
}

const memorySizes = (env: CheckEnv): ClusterCheck => ({
  name: "all nodes memory sizes",
  run: async (signal) => {
    const errs: string[] = [];
    for (const a of await ask(env, await sizedNodes(env, signal), (n) => n.memTotalKiB(signal))) {
      if (!a.ok) {
        errs.push(`error getting memory info for node ${JSON.stringify(a.node)}: ${errorText(a.error)}`);
        continue;
      }
      const total = a.value * 1024;
      const min = MIN_MEMORY[nodeType(env, a.node)];
      if (total < min) {
        errs.push(
          `node ${JSON.stringify(a.node)} does not meet memory requirements: expected at least ${Math.floor(min / MiB)} MiB, actual ${Math.floor(total / MiB)} MiB`,
        );
      }
    }
    const err = multiError(errs);
    if (err) throw err;
  },
});

const diskSizes = (env: CheckEnv): ClusterCheck => ({
  name: "all nodes disk sizes",
  run: async (signal) => {
    const errs: string[] = [];
    for (const a of await ask(env, sorted(await sizedNodes(env, signal)), (n) => n.ephemeral(signal))) {
      if (!a.ok) {
        // Upstream: nodes too old to serve the resource.
        if (readCode(a.error) === Code.PermissionDenied) throw new SkipCheck();
        errs.push(`error getting volume status for node ${JSON.stringify(a.node)}: ${errorText(a.error)}`);
        continue;
      }
      const { size, location } = a.value;
      if (size < MIN_EPHEMERAL_BYTES) {
        errs.push(
          `ephemeral partition ${JSON.stringify(location)} for node ${JSON.stringify(a.node)} is too small, expected at least ${iBytes(MIN_EPHEMERAL_BYTES)}, actual ${iBytes(size)}`,
        );
      }
    }
    const err = multiError(errs);
    if (err) throw err;
  },
});

const noDiagnostics = (env: CheckEnv): ClusterCheck => ({
  name: "no diagnostics",
  run: async (signal) => {
    const byNode: string[] = [];
    for (const a of await ask(env, sorted(ips(env.cluster.nodes)), (n) => n.diagnostics(signal))) {
      if (!a.ok) {
        // Upstream: nodes too old to serve Diagnostics.
        if (readCode(a.error) === Code.PermissionDenied) throw new SkipCheck();
        // Upstream returns the bare error; the node is named here, as a remote node may be the one failing.
        throw new Error(`error listing diagnostics on node ${JSON.stringify(a.node)}: ${errorText(a.error)}`);
      }
      if (a.value.length > 0) byNode.push(`${a.node}: ${a.value.join(", ")}`);
    }
    if (byNode.length > 0) throw new Error(`active diagnostics: ${byNode.join("; ")}`);
  },
});

const kubeletHealthy = (env: CheckEnv): ClusterCheck => ({
  name: "kubelet to be healthy",
  run: async (signal) => {
    if (!env.state.get({ namespace: K8S_NS, type: KubeletConfigType.type, id: "kubelet" })) throw new SkipCheck();
    await serviceHealth(env, "kubelet", controlPlanes(env), signal);
  },
});

const booted = (env: CheckEnv): ClusterCheck => ({
  name: "all nodes to finish boot sequence",
  run: async (signal) => {
    const byStage = new Map<number, string[]>();
    for (const a of await ask(env, ips(env.cluster.nodes), (n) => n.stage(signal))) {
      if (!a.ok) throw new Error(`error watching machine ${a.node} status: ${errorText(a.error)}`);
      // Upstream waits for the running stage (readiness is not part of this check).
      const stage = STAGES.indexOf(a.value as (typeof STAGES)[number]);
      const at = stage < 0 ? STAGES.indexOf("unknown") : stage;
      if (at !== STAGES.indexOf("running")) byStage.set(at, [...(byStage.get(at) ?? []), a.node]);
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
