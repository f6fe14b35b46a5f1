/**
 * cluster.KubernetesPullController: the Kubernetes registry's view, as raw Affiliates `cluster-raw`/`k8s/<node id>`.
 * While the registry is enabled it watches every Node with the kubelet's identity (the kubeconfig the kubelet
 * writes after its TLS bootstrap; nodes may read all Nodes) and turns each Node carrying a node id annotation,
 * except this node's own, into an affiliate (cluster-affiliate.ts). So it cannot help a node before its kubelet has
 * joined; that is what the control-plane endpoint is for. A registry switched off (or a node without a kubelet)
 * stops the watch and removes what it reported.
 */
import { createHash } from "node:crypto";
import { hostFiles, type Files } from "../../host/files/index.js";
import { kubeApi, type KubeApiFactory } from "../../host/kube/api.js";
import { KubeWatch } from "../../host/kube/watch.js";
import { inlineKubeconfigFiles } from "../../machinery/kubernetes/kubeconfig-files.js";
import { NODES, type NodeObject } from "../../machinery/kubernetes/objects.js";
import { KUBELET_KUBECONFIG, under } from "../../machinery/paths.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";
import { affiliateFromNode } from "../../machinery/resources/types/cluster-affiliate.js";
import { AffiliateType, CLUSTER_RAW_NS, DiscoveryConfigType } from "../../machinery/resources/types/discovery.js";
import { KubeletConfigType, NodenameType } from "../../machinery/resources/types/k8s.js";
import type { Controller, ReconcileContext } from "../../state/runtime/index.js";
import { DISCOVERY_CONFIG_ID } from "./discovery-config.js";

export interface KubernetesRegistryOptions {
  /** Folder the node paths (/etc/kubernetes) are under (default "/"). */
  root?: string;
  files?: Files;
  /** How often a present kubelet kubeconfig is read again, for a rotated one (default 30 s). */
  pollMs?: number;
  /** How often what is not there yet (the kubelet kubeconfig, this node's Node) is looked for again (default 5 s). */
  waitMs?: number;
  retryMs?: number;
}

export const K8S_AFFILIATE_PREFIX = "k8s/";

/** The kubelet kubeconfig with its files inlined, or undefined while the kubelet has not written it. */
export async function kubeletKubeconfig(files: Files, root: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await files.readFile(under(root, KUBELET_KUBECONFIG), "utf8");
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return undefined;
    throw e;
  }
  return inlineKubeconfigFiles(text, (p) => files.readFile(under(root, p)));
}

export function kubernetesPullController(opts: KubernetesRegistryOptions & { kubeApi?: KubeApiFactory } = {}): Controller {
  const files = opts.files ?? hostFiles;
  const root = opts.root ?? "/";
  const factory = opts.kubeApi ?? ((k) => kubeApi(k));
  const pollMs = opts.pollMs ?? 30_000;
  const waitMs = opts.waitMs ?? 5_000;
  let watch: KubeWatch<NodeObject> | undefined;
  let latest: ReconcileContext | undefined;
  let localName = "";
  let stopHooked = false;

  const close = () => {
    const w = watch;
    watch = undefined;
    return w?.close();
  };

  const publish = (ctx: ReconcileContext, nodes: NodeObject[]) => {
    const keep: string[] = [];
    for (const node of nodes) {
      // This node's own Node carries what it pushed; it knows itself already.
      if (node.metadata?.name === localName) continue;
      const spec = affiliateFromNode(node);
      if (!spec) continue;
      const id = `${K8S_AFFILIATE_PREFIX}${spec.nodeId}`;
      ctx.apply({ namespace: CLUSTER_RAW_NS, type: AffiliateType.type, id, spec });
      keep.push(id);
    }
    ctx.cleanup(CLUSTER_RAW_NS, AffiliateType.type, keep);
  };

  return {
    name: "cluster.KubernetesPullController",
    inputs: [
      { ...pointer(DiscoveryConfigType, DISCOVERY_CONFIG_ID), kind: "weak" },
      { ...pointer(NodenameType, "nodename"), kind: "weak" },
      { ...pointer(KubeletConfigType, "kubelet"), kind: "weak" },
    ],
    outputs: [{ type: AffiliateType.type, kind: "shared" }],
    async reconcile(ctx) {
      latest = ctx;
      if (!stopHooked) {
        stopHooked = true;
        ctx.signal.addEventListener("abort", () => void close(), { once: true });
      }
      const enabled = readSpec(ctx, DiscoveryConfigType, DISCOVERY_CONFIG_ID)?.registryKubernetesEnabled === true;
      if (!enabled || !readSpec(ctx, KubeletConfigType, "kubelet")) {
        await close();
        ctx.cleanup(CLUSTER_RAW_NS, AffiliateType.type, []);
        return;
      }
      const nodename = readSpec(ctx, NodenameType, "nodename")?.nodename;
      if (!nodename) return;
      const kubeconfig = await kubeletKubeconfig(files, root);
      if (!kubeconfig) return { requeueAfterMs: waitMs };
      const key = createHash("sha256").update(kubeconfig).digest("hex");
      if (watch && watch.key !== key) {
        ctx.log("kubelet kubeconfig changed, restarting the Kubernetes registry watch");
        await close();
      }
      localName = nodename;
      if (!watch) {
        const w: KubeWatch<NodeObject> = new KubeWatch<NodeObject>(key, {
          kubeconfig,
          factory,
          kind: NODES,
          list: {},
          retryMs: opts.retryMs,
          onChange: (nodes) => {
            if (watch !== w || !latest || latest.signal.aborted) return;
            try {
              publish(latest, nodes);
            } catch (e) {
              latest.log("error updating affiliates from the Kubernetes registry", { error: (e as Error).message });
            }
          },
          onError: (err, n) => latest?.log("kubernetes registry node watch error", { error: err.message, errorCount: n }),
        });
        watch = w;
      }
      if (watch.synced) publish(ctx, watch.objects());
      return { requeueAfterMs: pollMs };
    },
  };
}
