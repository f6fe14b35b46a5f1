/**
 * k8s.NodeApplyController: makes this node's Node object carry the NodeLabelSpecs, NodeAnnotationSpecs and
 * NodeTaintSpecs, and cordons it while a NodeCordonedSpec exists, tracking what it owns in the Node's
 * `talos.dev/owned-*` annotations (src/machinery/kubernetes/node-apply.ts has the rules).
 *
 * The client, as upstream: on a control plane the localhost admin kubeconfig — NodeRestriction forbids the kubelet's
 * identity the `node-role.kubernetes.io/*` labels; on a worker the kubelet's kubeconfig
 * (/etc/kubernetes/kubeconfig-kubelet, there once the kubelet is bootstrapped, looked for every `pollMs`).
 * The Node is read and replaced with its resourceVersion; a conflict (someone else wrote it in between) or a
 * Forbidden (the kubelet's authorisation not there yet) is tried again for up to `retryForMs`. A NodeStatus
 * change (the Node's labels or annotations changed) brings a new pass, so a label removed by hand comes back.
 * Nothing happens where no kubelet runs (no KubeletConfig) or the node skips registration.
 */
import { hostFiles, type Files } from "../../host/files/index.js";
import { kubeApi, KubeApiError, type KubeWriter, type KubeWriterFactory } from "../../host/kube/api.js";
import { inlineKubeconfigFiles } from "../../machinery/kubernetes/kubeconfig-files.js";
import { applyToNode, nodeChanged, type NodeWants } from "../../machinery/kubernetes/node-apply.js";
import type { NodeObject } from "../../machinery/kubernetes/objects.js";
import { KUBELET_KUBECONFIG, under } from "../../machinery/paths.js";
import { pointer, readAll, readSpec } from "../../machinery/resources/read.js";
import { isControlPlane, machineType, machineTypeInput } from "../../machinery/resources/types/config.js";
import {
  K8S_NS,
  KubeletConfigType,
  NodeAnnotationSpecType,
  NodeCordonedSpecType,
  NodeLabelSpecType,
  NodenameType,
  NodeStatusType,
  NodeTaintSpecType,
} from "../../machinery/resources/types/k8s.js";
import { KubernetesCertsType, SECRET_IDS } from "../../machinery/resources/types/secrets.js";
import type { Controller, ReconcileContext } from "../../state/runtime/index.js";

export interface NodeApplyOptions {
  /** Folder the node paths are under (default "/"). */
  root?: string;
  files?: Files;
  /** Builds the API client from a kubeconfig (tests pass an in-memory fake). */
  connect?: KubeWriterFactory;
  /** How often a worker looks for the kubelet kubeconfig, and looks again for a Node not registered yet (default 10 s). */
  pollMs?: number;
  /** How long conflicts and Forbidden answers are retried within one pass (default 10 s, upstream's). */
  retryForMs?: number;
}

const NODE = { apiVersion: "v1", kind: "Node" };

export function nodeApplyController(opts: NodeApplyOptions = {}): Controller {
  const files = opts.files ?? hostFiles;
  const root = opts.root ?? "/";
  const connect = opts.connect ?? ((kubeconfig: string) => kubeApi(kubeconfig));
  const pollMs = opts.pollMs ?? 10_000;
  const retryForMs = opts.retryForMs ?? 10_000;

  const kubeconfigFor = async (ctx: ReconcileContext): Promise<string | undefined> => {
    if (isControlPlane(machineType(ctx))) return readSpec(ctx, KubernetesCertsType, SECRET_IDS.k8sCerts)?.localhostAdminKubeconfig || undefined;
    let text: string;
    try {
      text = await files.readFile(under(root, KUBELET_KUBECONFIG), "utf8");
    } catch (e) {
      if ((e as { code?: string }).code === "ENOENT") return undefined;
      throw e;
    }
    return inlineKubeconfigFiles(text, (p) => files.readFile(under(root, p)));
  };

  return {
    name: "k8s.NodeApplyController",
    inputs: [
      { namespace: K8S_NS, type: NodeAnnotationSpecType.type, kind: "weak" },
      { namespace: K8S_NS, type: NodeLabelSpecType.type, kind: "weak" },
      { namespace: K8S_NS, type: NodeTaintSpecType.type, kind: "weak" },
      { namespace: K8S_NS, type: NodeCordonedSpecType.type, kind: "weak" },
      // Not read: a change of the Node seen by the status watch is the cue to look again.
      { namespace: K8S_NS, type: NodeStatusType.type, kind: "weak" },
      { ...pointer(KubernetesCertsType, SECRET_IDS.k8sCerts), kind: "weak" },
      { ...pointer(NodenameType, "nodename"), kind: "weak" },
      { ...pointer(KubeletConfigType, "kubelet"), kind: "weak" },
      machineTypeInput,
    ],
    outputs: [],
    async reconcile(ctx) {
      const nodename = readSpec(ctx, NodenameType, "nodename");
      if (!nodename || nodename.skipNodeRegistration || !readSpec(ctx, KubeletConfigType, "kubelet")) return;
      const mt = machineType(ctx);
      if (!mt || mt === "unknown") return;
      const kubeconfig = await kubeconfigFor(ctx);
      // A control plane's kubeconfig is a resource (its arrival is an input event); a worker's is a file.
      if (!kubeconfig) return isControlPlane(mt) ? undefined : { requeueAfterMs: pollMs };
      const wants = nodeWants(ctx);
      const client = connect(kubeconfig);
      try {
        const done = await syncNode(client, nodename.nodename, wants, { signal: ctx.signal, retryForMs, log: (m, f) => ctx.log(m, f) });
        if (!done) return { requeueAfterMs: pollMs };
      } finally {
        await client.close();
      }
    },
  };
}

/** What the spec resources ask for. */
export function nodeWants(ctx: Pick<ReconcileContext, "list">): NodeWants {
  const kv = (type: typeof NodeLabelSpecType) => Object.fromEntries(readAll(ctx, type).map((r) => [r.spec.key, r.spec.value]));
  return {
    labels: kv(NodeLabelSpecType),
    annotations: kv(NodeAnnotationSpecType),
    taints: readAll(ctx, NodeTaintSpecType).map((r) => ({ key: r.spec.key, value: r.spec.value, effect: r.spec.effect })),
    cordon: readAll(ctx, NodeCordonedSpecType).length > 0,
  };
}

interface SyncOptions {
  signal?: AbortSignal;
  retryForMs: number;
  retryDelayMs?: number;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

/**
 * One pass: read the Node, apply, write it back when something changed. False when the Node does not exist (yet).
 * Conflicts and Forbidden are retried until `retryForMs` has passed; then, like every other failure, they throw.
 */
export async function syncNode(client: KubeWriter, name: string, wants: NodeWants, o: SyncOptions): Promise<boolean> {
  const deadline = Date.now() + o.retryForMs;
  for (;;) {
    try {
      const node = (await client.get({ ...NODE, name }, o.signal)) as NodeObject | undefined;
      if (!node) {
        o.log?.("node not registered yet", { node: name });
        return false;
      }
      const next = applyToNode(node, wants, (what, key) => o.log?.(`skipping ${what} update, ${what} is not owned`, { key }));
      if (nodeChanged(node, next)) await client.update(next, o.signal);
      return true;
    } catch (e) {
      const retriable = e instanceof KubeApiError && (e.status === 409 || e.status === 403);
      if (!retriable || Date.now() >= deadline || o.signal?.aborted) throw new Error(`error syncing node ${name}: ${(e as Error).message}`);
      await delay(o.retryDelayMs ?? 100, o.signal);
    }
  }
}

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
