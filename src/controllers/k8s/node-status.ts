/**
 * k8s.NodeStatusController: NodeStatuses `k8s`/<nodename>, this node's Kubernetes Node object as the kubelet's
 * identity sees it (ready, cordoned, labels, annotations, pod CIDRs), from a watch of that one Node with the
 * kubelet kubeconfig (/etc/kubernetes/kubeconfig-kubelet, written by the kubelet after its TLS bootstrap).
 * The file is looked at again every `pollMs` (upstream hashes it on a 30 s poll too); a changed kubeconfig or
 * node name, or five failed watch attempts in a row, replace the client. Nothing is published before the first
 * list; a Node that does not exist (yet) leaves no NodeStatus, as upstream. A node that runs no kubelet (no
 * KubeletConfig) watches nothing.
 */
import { createHash } from "node:crypto";
import { hostFiles, type Files } from "../../host/files/index.js";
import { kubeApi, type KubeApiFactory } from "../../host/kube/api.js";
import { KubeWatch } from "../../host/kube/watch.js";
import { inlineKubeconfigFiles } from "../../machinery/kubernetes/kubeconfig-files.js";
import { conditionStatus, NODES, type NodeObject } from "../../machinery/kubernetes/objects.js";
import { parsePrefix } from "../../machinery/net/addr.js";
import { KUBELET_KUBECONFIG, under } from "../../machinery/paths.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";
import { K8S_NS, KubeletConfigType, NodenameType, NodeStatusType, type NodeStatusSpec } from "../../machinery/resources/types/k8s.js";
import type { Controller, ReconcileContext } from "../../state/runtime/index.js";

export interface NodeStatusOptions {
  /** Folder the node paths are under (default "/"). */
  root?: string;
  files?: Files;
  kubeApi?: KubeApiFactory;
  /** How often the kubeconfig file is read again (default 30 s). */
  pollMs?: number;
  /** Pause before a failed list/watch is tried again (default 1 s). */
  retryMs?: number;
}

/** Upstream's watchErrorsThreshold. */
const WATCH_ERRORS_THRESHOLD = 5;

export function nodeStatusSpec(node: NodeObject): NodeStatusSpec {
  return {
    nodename: node.metadata?.name ?? "",
    nodeReady: conditionStatus(node.status?.conditions, "Ready") === "True",
    unschedulable: node.spec?.unschedulable ?? false,
    labels: { ...node.metadata?.labels },
    annotations: { ...node.metadata?.annotations },
    podCIDRs: (node.spec?.podCIDRs ?? []).filter((c) => parsePrefix(c) !== undefined),
  };
}

export function nodeStatusController(opts: NodeStatusOptions = {}): Controller {
  const files = opts.files ?? hostFiles;
  const root = opts.root ?? "/";
  const factory = opts.kubeApi ?? ((k) => kubeApi(k));
  const pollMs = opts.pollMs ?? 30_000;
  let watch: KubeWatch<NodeObject> | undefined;
  let latest: ReconcileContext | undefined;
  let stopHooked = false;

  const close = () => {
    const w = watch;
    watch = undefined;
    return w?.close();
  };

  /** Writes what the watch sees; called from the watch and from reconcile. */
  const publish = (ctx: ReconcileContext, nodes: NodeObject[]) => {
    const keep: string[] = [];
    for (const node of nodes) {
      const name = node.metadata?.name;
      if (!name) continue;
      ctx.apply({ namespace: K8S_NS, type: NodeStatusType.type, id: name, spec: nodeStatusSpec(node) });
      keep.push(name);
    }
    ctx.cleanup(K8S_NS, NodeStatusType.type, keep);
  };

  return {
    name: "k8s.NodeStatusController",
    inputs: [
      { ...pointer(NodenameType, "nodename"), kind: "weak" },
      { ...pointer(KubeletConfigType, "kubelet"), kind: "weak" },
    ],
    outputs: [{ type: NodeStatusType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      latest = ctx;
      if (!stopHooked) {
        stopHooked = true;
        ctx.signal.addEventListener("abort", () => void close(), { once: true });
      }
      const nodename = readSpec(ctx, NodenameType, "nodename");
      if (!nodename) return;
      if (nodename.skipNodeRegistration || !readSpec(ctx, KubeletConfigType, "kubelet")) {
        // Not registered with Kubernetes (or no kubelet at all): there is no Node to watch.
        await close();
        ctx.cleanup(K8S_NS, NodeStatusType.type, []);
        return;
      }
      let kubeconfig: string;
      try {
        kubeconfig = await files.readFile(under(root, KUBELET_KUBECONFIG), "utf8");
      } catch (e) {
        if ((e as { code?: string }).code !== "ENOENT") throw e;
        // The kubelet writes it once bootstrapped; until then there is nothing to watch with.
        return { requeueAfterMs: pollMs };
      }
      kubeconfig = await inlineKubeconfigFiles(kubeconfig, (p) => files.readFile(under(root, p)));
      const key = `${nodename.nodename}\n${createHash("sha256").update(kubeconfig).digest("hex")}`;
      if (watch && watch.key !== key) {
        ctx.log("kubelet kubeconfig or node name changed, restarting node watcher");
        await close();
      }
      if (!watch) {
        const w: KubeWatch<NodeObject> = new KubeWatch<NodeObject>(key, {
          kubeconfig,
          factory,
          kind: NODES,
          list: { fieldSelector: `metadata.name=${nodename.nodename}` },
          retryMs: opts.retryMs,
          onChange: (nodes) => {
            if (watch !== w || !latest || latest.signal.aborted) return;
            try {
              publish(latest, nodes);
            } catch (e) {
              latest.log("error updating node status", { error: (e as Error).message });
            }
          },
          onError: (err, n) => {
            latest?.log("node watch error", { error: err.message, errorCount: n });
            // A client that keeps failing is rebuilt at the next look (it may be pinned to a dead endpoint).
            if (n >= WATCH_ERRORS_THRESHOLD && watch === w) void close();
          },
        });
        watch = w;
      }
      if (watch.synced) publish(ctx, watch.objects());
      return { requeueAfterMs: pollMs };
    },
  };
}
