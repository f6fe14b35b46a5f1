/**
 * ClusterService.HealthCheck, run server-side like machined does: control planes only, node list from
 * the request, the local Members or (last resort) the Kubernetes Nodes, `discovered nodes: [...]` first,
 * then one deduplicated `waiting for <check>: <state>` line per change until every check passes (stream
 * ends OK) or the wait timeout (default 20 min) passes (DeadlineExceeded naming the check and its last
 * error). The Kubernetes client of a run is built once, from the node's admin kubeconfig (KubernetesSecrets
 * `k8s-certs`, server = the cluster endpoint unless the request forces one), and closed when the run ends.
 * Every other node is read through its own API, forwarded with this node's client certificate and the
 * caller's roles (health-remote.ts); a node that holds no client certificate cannot ask them.
 */
import type { HealthCheckRequest } from "../../machinery/api/gen/cluster/cluster_pb.js";
import { ApiError, Code } from "../../machinery/errors.js";
import { readMeminfo } from "../../host/proc/index.js";
import { MemberType } from "../../machinery/resources/types/cluster.js";
import { machineType } from "../../machinery/resources/types/config.js";
import { kubeApi, type KubeApi, type KubeApiFactory } from "../../host/kube/api.js";
import { NODES, type NodeObject } from "../../machinery/kubernetes/objects.js";
import { pointer, readAll, readSpec } from "../../machinery/resources/read.js";
import { KubernetesCertsType, SECRET_IDS } from "../../machinery/resources/types/secrets.js";
import { defaultClusterChecks, type CheckEnv, type EtcdMemberView, type NodeReads } from "../../lifecycle/health/checks.js";
import { localNodeReads, unreachableNodeReads } from "../../lifecycle/health/reads.js";
import type { Targets } from "../forward/one2many.js";
import { remoteNodeReads } from "./health-remote.js";
import {
  clusterInfoFromKubernetesNodes,
  clusterInfoFromLists,
  clusterInfoFromMembers,
  quoteList,
  type ClusterInfo,
} from "../../lifecycle/health/nodes.js";
import { dedupReporter, waitChecks, type WaitOptions } from "../../lifecycle/health/wait.js";
import type { State } from "../../state/types.js";
import type { Handlers } from "../transport/service.js";
import type { ApiDeps } from "../deps.js";
import { withMetadata } from "../reply.js";

export const DEFAULT_WAIT_TIMEOUT_MS = 20 * 60_000;

export interface HealthOptions {
  intervalMs?: number;
  now?: () => number;
  sleep?: WaitOptions["sleep"];
  memTotalKiB?: () => Promise<number>;
  etcdMembers?: () => Promise<EtcdMemberView[]>;
  etcdRuns?: () => boolean;
  /** Builds the Kubernetes client from a kubeconfig (default: the real one). */
  kubeApi?: KubeApiFactory;
  /** How other nodes are asked (the API server's Forwarder); without it they are not reachable. */
  forwarder?: Targets & { canForward(): boolean };
  /** Deadline of one read from another node (default 10 s). */
  readTimeoutMs?: number;
}

/** Why another node cannot be asked from a node without forwarding material (a worker, or before its PKI is ready). */
export const NO_CLIENT_CERTIFICATE = "this node holds no client certificate to forward with";
const NO_FORWARDER = "this API server has no request forwarding";

/** The Kubernetes client of one health run: built on first use from the admin kubeconfig, then reused. */
export function runKubernetesClient(state: Pick<State, "get">, factory: KubeApiFactory, forceEndpoint: string) {
  let api: KubeApi | undefined;
  return {
    get: async (): Promise<KubeApi> => {
      if (api) return api;
      const ptr = pointer(KubernetesCertsType, SECRET_IDS.k8sCerts);
      const kubeconfig = readSpec(state, KubernetesCertsType, SECRET_IDS.k8sCerts)?.adminKubeconfig;
      if (!kubeconfig) throw new Error(`error getting kubeconfig: resource ${ptr.type}(${ptr.namespace}/${ptr.id}@undefined) doesn't exist`);
      api = factory(kubeconfig, { forceEndpoint: forceEndpoint || undefined });
      return api;
    },
    close: async () => {
      await api?.close();
      api = undefined;
    },
  };
}

/** Unimplemented unless this node is a control plane (upstream machinehelper.CheckControlplane). */
export function requireControlPlane(state: Pick<State, "get">, api = "cluster health check"): void {
  const mt = machineType(state);
  if (mt === undefined) throw new ApiError(Code.Unimplemented, `machine type is not set, cannot use ${api} API`);
  if (mt !== "controlplane" && mt !== "init") throw new ApiError(Code.Unimplemented, `${api} is only available on control plane nodes`);
}

export async function discoverCluster(
  state: Pick<State, "list">,
  req: HealthCheckRequest,
  kubernetes?: () => Promise<KubeApi>,
  signal?: AbortSignal,
): Promise<ClusterInfo> {
  const cp = req.clusterInfo?.controlPlaneNodes ?? [];
  const workers = req.clusterInfo?.workerNodes ?? [];
  if (cp.length > 0 || workers.length > 0) return clusterInfoFromLists(cp, workers);
  const members = readAll(state, MemberType);
  if (members.length > 0) return clusterInfoFromMembers(members);
  if (!kubernetes) throw new ApiError(Code.FailedPrecondition, "no cluster members are known: pass the nodes (--control-plane-nodes, --worker-nodes)");
  // The last resort, as upstream: the nodes Kubernetes knows.
  const api = await kubernetes();
  return clusterInfoFromKubernetesNodes((await api.list<NodeObject>(NODES, {}, signal)).items);
}

export function waitTimeoutMs(req: HealthCheckRequest): number {
  const d = req.waitTimeout;
  if (!d) return DEFAULT_WAIT_TIMEOUT_MS;
  return Number(d.seconds) * 1000 + Math.floor(d.nanos / 1e6);
}

export function healthHandlers(deps: ApiDeps, opts: HealthOptions = {}): Handlers {
  const now = opts.now ?? Date.now;
  return {
    HealthCheck: async (req: HealthCheckRequest, send: (m: { message: string }) => Promise<void>, ctx) => {
      requireControlPlane(deps.state);
      const deadline = now() + waitTimeoutMs(req);
      const k8s = runKubernetesClient(deps.state, opts.kubeApi ?? kubeApi, req.clusterInfo?.forceEndpoint ?? "");
      try {
        const cluster = await discoverCluster(deps.state, req, k8s.get, ctx.signal);
        const emit = (message: string) => send(withMetadata(ctx, { message }));
        await emit(`discovered nodes: ${quoteList(cluster.nodes.map((n) => n.internalIP))}`);
        const names = new Set(deps.localNames());
        const isLocal = (ip: string) => names.has(ip);
        const local = localNodeReads({
          state: deps.state,
          platformMode: deps.platform.mode,
          memTotalKiB: opts.memTotalKiB ?? (async () => Number((await readMeminfo()).memtotal)),
          etcdMembers: opts.etcdMembers,
        });
        const remote = new Map<string, NodeReads>();
        const fwd = opts.forwarder;
        const node = (ip: string): NodeReads => {
          if (isLocal(ip)) return local;
          if (!fwd) return unreachableNodeReads(ip, NO_FORWARDER);
          // Checked at every read: the certificate may come (or go) while the run waits.
          if (!fwd.canForward()) return unreachableNodeReads(ip, NO_CLIENT_CERTIFICATE);
          let r = remote.get(ip);
          if (!r) remote.set(ip, (r = remoteNodeReads(fwd, ip, { roles: ctx.roles, signal: ctx.signal, timeoutMs: opts.readTimeoutMs })));
          return r;
        };
        const env: CheckEnv = { state: deps.state, cluster, isLocal, node, etcdRuns: opts.etcdRuns, kubernetes: k8s.get };
        await waitChecks(defaultClusterChecks(env), dedupReporter(emit), {
          deadline,
          intervalMs: opts.intervalMs,
          now,
          sleep: opts.sleep,
          signal: ctx.signal,
        });
      } finally {
        await k8s.close();
      }
    },
  };
}
