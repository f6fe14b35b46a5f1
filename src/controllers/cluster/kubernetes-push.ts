/**
 * cluster.KubernetesPushController: this node's local Affiliate onto its own Node object as annotations (node id,
 * self IPs, API server port, KubeSpan fields; an empty field removes its annotation), with the kubelet's identity,
 * while the Kubernetes registry is enabled. Until the kubelet has written its kubeconfig and registered the Node
 * there is nothing to write to, so it looks again every `waitMs`; the kubeconfig is re-read every `pollMs` (a
 * rotated one gets a new client); a write that fails is a controller error and is
 * retried with the runtime's backoff, as upstream.
 */
import { createHash } from "node:crypto";
import { hostFiles } from "../../host/files/index.js";
import { nodeAnnotator, type NodeAnnotator, type NodeAnnotatorFactory } from "../../host/kube/node-annotations.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";
import { annotationsFromAffiliate } from "../../machinery/resources/types/cluster-affiliate.js";
import { CLUSTER_NS, IdentityType } from "../../machinery/resources/types/cluster.js";
import { AffiliateType, DiscoveryConfigType } from "../../machinery/resources/types/discovery.js";
import { KubeletConfigType } from "../../machinery/resources/types/k8s.js";
import type { Controller } from "../../state/runtime/index.js";
import { DISCOVERY_CONFIG_ID } from "./discovery-config.js";
import { kubeletKubeconfig, type KubernetesRegistryOptions } from "./kubernetes-pull.js";

export function kubernetesPushController(opts: KubernetesRegistryOptions & { annotator?: NodeAnnotatorFactory } = {}): Controller {
  const files = opts.files ?? hostFiles;
  const root = opts.root ?? "/";
  const factory = opts.annotator ?? nodeAnnotator;
  const pollMs = opts.pollMs ?? 30_000;
  const waitMs = opts.waitMs ?? 5_000;
  let client: { key: string; annotator: NodeAnnotator } | undefined;
  /** What was last written successfully (node name + annotations), so an unchanged affiliate costs no request. */
  let pushed = "";
  let stopHooked = false;
  let waitingLogged = "";

  const drop = async () => {
    const c = client;
    client = undefined;
    pushed = "";
    await c?.annotator.close();
  };

  return {
    name: "cluster.KubernetesPushController",
    inputs: [
      { ...pointer(DiscoveryConfigType, DISCOVERY_CONFIG_ID), kind: "weak" },
      { ...pointer(IdentityType, "local"), kind: "weak" },
      { namespace: CLUSTER_NS, type: AffiliateType.type, kind: "weak" },
      { ...pointer(KubeletConfigType, "kubelet"), kind: "weak" },
    ],
    outputs: [],
    async reconcile(ctx) {
      if (!stopHooked) {
        stopHooked = true;
        ctx.signal.addEventListener("abort", () => void drop(), { once: true });
      }
      const enabled = readSpec(ctx, DiscoveryConfigType, DISCOVERY_CONFIG_ID)?.registryKubernetesEnabled === true;
      if (!enabled || !readSpec(ctx, KubeletConfigType, "kubelet")) {
        await drop();
        return;
      }
      const nodeId = readSpec(ctx, IdentityType, "local")?.nodeId;
      const affiliate = nodeId ? readSpec(ctx, AffiliateType, nodeId, CLUSTER_NS) : undefined;
      if (!nodeId || !affiliate?.nodename) return;
      const kubeconfig = await kubeletKubeconfig(files, root);
      if (!kubeconfig) return { requeueAfterMs: waitMs };
      const key = createHash("sha256").update(kubeconfig).digest("hex");
      if (client && client.key !== key) await drop();
      client ??= { key, annotator: factory(kubeconfig) };
      const annotations = annotationsFromAffiliate(nodeId, affiliate);
      const what = JSON.stringify([affiliate.nodename, annotations]);
      if (what === pushed) return { requeueAfterMs: pollMs };
      let result;
      try {
        result = await client.annotator.annotate(affiliate.nodename, annotations, ctx.signal);
      } catch (e) {
        // A fresh connection next time, as upstream resets its client after a failed push.
        await drop();
        throw new Error(`error pushing to Kubernetes registry: ${(e as Error).message}`);
      }
      if (result === "missing") {
        if (waitingLogged !== affiliate.nodename) ctx.log("the Node is not registered yet, the Kubernetes registry push waits", { node: affiliate.nodename });
        waitingLogged = affiliate.nodename;
        return { requeueAfterMs: waitMs };
      }
      pushed = what;
      if (result === "updated") ctx.log("local affiliate pushed to the Kubernetes registry", { node: affiliate.nodename });
      return { requeueAfterMs: pollMs };
    },
  };
}
