/**
 * k8s.KubeletStaticPodController: StaticPodStatuses `k8s`/<namespace>/<pod>, the status of every static pod the
 * local kubelet runs (pods whose `kubernetes.io/config.source` is `file` or `http`), polled every 15 s from the
 * kubelet's `https://127.0.0.1:10250/pods/`. Only the API server's kubelet client certificate
 * (KubernetesDynamicCerts) may ask the kubelet, so this works on control planes only, as upstream. The kubelet's
 * serving certificate is self-signed: its /var/lib/kubelet/pki/kubelet.crt is trusted next to the cluster CA.
 * No running kubelet: no statuses. A failed poll keeps the last statuses until the next one.
 */
import { hostFiles, type Files } from "../../host/files/index.js";
import { fetchKubeletPods, type KubeletPodsFetcher } from "../../host/kube/kubelet.js";
import { KUBELET_PKI, under } from "../../machinery/paths.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";
import { K8S_NS, NodenameType, StaticPodStatusType } from "../../machinery/resources/types/k8s.js";
import { RUNTIME_NS, ServiceType } from "../../machinery/resources/types/runtime.js";
import { KubernetesDynamicCertsType, KubernetesRootType, SECRET_IDS } from "../../machinery/resources/types/secrets.js";
import type { Controller } from "../../state/runtime/index.js";

export interface KubeletStaticPodOptions {
  root?: string;
  files?: Files;
  fetchPods?: KubeletPodsFetcher;
  /** Where the kubelet listens (default 127.0.0.1:10250). */
  kubelet?: { host: string; port: number };
  /** Poll interval (default 15 s). */
  refreshMs?: number;
}

const STATIC_SOURCES = new Set(["file", "http"]);

export function kubeletStaticPodController(opts: KubeletStaticPodOptions = {}): Controller {
  const files = opts.files ?? hostFiles;
  const root = opts.root ?? "/";
  const fetchPods = opts.fetchPods ?? fetchKubeletPods;
  const refreshMs = opts.refreshMs ?? 15_000;
  return {
    name: "k8s.KubeletStaticPodController",
    inputs: [
      { ...pointer(NodenameType, "nodename"), kind: "weak" },
      { namespace: RUNTIME_NS, type: ServiceType.type, id: "kubelet", kind: "weak" },
      { ...pointer(KubernetesDynamicCertsType, SECRET_IDS.k8sDynamicCerts), kind: "weak" },
      { ...pointer(KubernetesRootType, SECRET_IDS.k8s), kind: "weak" },
    ],
    outputs: [{ type: StaticPodStatusType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const kubelet = readSpec(ctx, ServiceType, "kubelet", RUNTIME_NS);
      if (!kubelet?.running) {
        ctx.cleanup(K8S_NS, StaticPodStatusType.type, []);
        return;
      }
      const rootSecrets = readSpec(ctx, KubernetesRootType, SECRET_IDS.k8s);
      const certs = readSpec(ctx, KubernetesDynamicCertsType, SECRET_IDS.k8sDynamicCerts);
      const nodename = readSpec(ctx, NodenameType, "nodename");
      // Workers have neither: only the API server may talk to a kubelet there.
      if (!rootSecrets?.issuingCA || !certs || !nodename) return;
      let ca = rootSecrets.issuingCA.crt;
      try {
        ca += `\n${await files.readFile(under(root, `${KUBELET_PKI}/kubelet.crt`), "utf8")}`;
      } catch (e) {
        // No self-signed serving certificate: assume one the cluster CA signed.
        if ((e as { code?: string }).code !== "ENOENT") throw new Error(`error reading kubelet certificate: ${(e as Error).message}`);
      }
      let pods;
      try {
        pods = await fetchPods(
          {
            host: opts.kubelet?.host,
            port: opts.kubelet?.port,
            cert: certs.apiServerKubeletClient.crt,
            key: certs.apiServerKubeletClient.key,
            ca,
            servername: nodename.nodename,
          },
          ctx.signal,
        );
      } catch (e) {
        // The kubelet may still be starting; the statuses stay as last seen until the next poll.
        ctx.log("error refreshing pod status", { error: `error fetching pod status: ${(e as Error).message}` });
        return { requeueAfterMs: refreshMs };
      }
      const seen: string[] = [];
      for (const pod of pods) {
        if (!STATIC_SOURCES.has(pod.metadata?.annotations?.["kubernetes.io/config.source"] ?? "")) continue;
        const id = `${pod.metadata?.namespace ?? ""}/${pod.metadata?.name ?? ""}`;
        ctx.apply({ namespace: K8S_NS, type: StaticPodStatusType.type, id, spec: pod.status ?? {} });
        seen.push(id);
      }
      ctx.cleanup(K8S_NS, StaticPodStatusType.type, seen);
      return { requeueAfterMs: refreshMs };
    },
  };
}
