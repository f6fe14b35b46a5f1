/**
 * k8s.EndpointController: Endpoints `controlplane`/`kube-apiserver`, the API server addresses from a watch of
 * the EndpointSlice `default/kubernetes`. Control planes watch with the admin kubeconfig of KubernetesSecrets
 * (cluster endpoint, so discovery works before the local API server is up); workers with the kubelet kubeconfig
 * (the `system:talos-nodes` role lets nodes read EndpointSlices). IPv4 and IPv6 slices each replace their own
 * family's addresses; a slice that goes away leaves the last addresses, as upstream. Nothing is watched where
 * this node runs no kubelet (no KubeletConfig): such a node is no Kubernetes node.
 */
import { createHash } from "node:crypto";
import { hostFiles, type Files } from "../../host/files/index.js";
import { kubeApi, type KubeApiFactory } from "../../host/kube/api.js";
import { KubeWatch } from "../../host/kube/watch.js";
import { inlineKubeconfigFiles } from "../../machinery/kubernetes/kubeconfig-files.js";
import { ENDPOINTSLICES, type EndpointSliceObject } from "../../machinery/kubernetes/objects.js";
import { compareAddr, formatAddr, parseAddr } from "../../machinery/net/addr.js";
import { KUBELET_KUBECONFIG, under } from "../../machinery/paths.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";
import { isControlPlane, machineType, machineTypeInput } from "../../machinery/resources/types/config.js";
import { CONTROLPLANE_NS, ENDPOINT_IDS, EndpointType } from "../../machinery/resources/types/k8s-status.js";
import { KubeletConfigType } from "../../machinery/resources/types/k8s.js";
import { KubernetesCertsType, SECRET_IDS } from "../../machinery/resources/types/secrets.js";
import type { Controller, ReconcileContext } from "../../state/runtime/index.js";

export interface EndpointOptions {
  root?: string;
  files?: Files;
  kubeApi?: KubeApiFactory;
  /** How often the worker's kubelet kubeconfig is read again (default 30 s). */
  pollMs?: number;
  retryMs?: number;
}

/** The new address list after `slice`: its family's addresses replaced, the other family's kept. */
export function endpointAddresses(current: string[], slice: EndpointSliceObject): string[] {
  const parsed = (slice.endpoints ?? []).flatMap((e) => e.addresses ?? []).flatMap((a) => {
    const ip = parseAddr(a);
    return ip ? [ip] : [];
  });
  parsed.sort(compareAddr);
  const addrs = parsed.map(formatAddr);
  let v4 = current.filter((a) => !a.includes(":"));
  let v6 = current.filter((a) => a.includes(":"));
  if (slice.addressType === "IPv4") v4 = addrs;
  else if (slice.addressType === "IPv6") v6 = addrs;
  return [...v4, ...v6];
}

export function endpointController(opts: EndpointOptions = {}): Controller {
  const files = opts.files ?? hostFiles;
  const root = opts.root ?? "/";
  const factory = opts.kubeApi ?? ((k) => kubeApi(k));
  const pollMs = opts.pollMs ?? 30_000;
  const ptr = { namespace: CONTROLPLANE_NS, type: EndpointType.type, id: ENDPOINT_IDS.apiServer };
  let watch: KubeWatch<EndpointSliceObject> | undefined;
  let latest: ReconcileContext | undefined;
  let stopHooked = false;

  const close = () => {
    const w = watch;
    watch = undefined;
    return w?.close();
  };

  const publish = (ctx: ReconcileContext, slices: EndpointSliceObject[]) => {
    // No slice (yet, or any more): nothing new to say.
    if (slices.length === 0) return;
    let addrs = readSpec(ctx, EndpointType, ENDPOINT_IDS.apiServer)?.addresses ?? [];
    for (const s of slices) addrs = endpointAddresses(addrs, s);
    ctx.apply({ ...ptr, spec: { addresses: addrs, hosts: [] } });
  };

  /** The kubeconfig to watch with, or undefined while there is none. */
  const kubeconfigFor = async (ctx: ReconcileContext): Promise<string | undefined> => {
    if (isControlPlane(machineType(ctx))) return readSpec(ctx, KubernetesCertsType, SECRET_IDS.k8sCerts)?.adminKubeconfig || undefined;
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
    name: "k8s.EndpointController",
    inputs: [
      machineTypeInput,
      { ...pointer(KubernetesCertsType, SECRET_IDS.k8sCerts), kind: "weak" },
      { ...pointer(KubeletConfigType, "kubelet"), kind: "weak" },
    ],
    outputs: [{ type: EndpointType.type, kind: "shared" }],
    async reconcile(ctx) {
      latest = ctx;
      if (!stopHooked) {
        stopHooked = true;
        ctx.signal.addEventListener("abort", () => void close(), { once: true });
      }
      const mt = machineType(ctx);
      if (!mt || mt === "unknown" || !readSpec(ctx, KubeletConfigType, "kubelet")) {
        await close();
        return;
      }
      const kubeconfig = await kubeconfigFor(ctx);
      if (!kubeconfig) {
        await close();
        return isControlPlane(mt) ? undefined : { requeueAfterMs: pollMs };
      }
      const key = `${mt}\n${createHash("sha256").update(kubeconfig).digest("hex")}`;
      if (watch && watch.key !== key) await close();
      if (!watch) {
        const w: KubeWatch<EndpointSliceObject> = new KubeWatch<EndpointSliceObject>(key, {
          kubeconfig,
          factory,
          kind: ENDPOINTSLICES,
          list: { namespace: "default", fieldSelector: "metadata.name=kubernetes" },
          retryMs: opts.retryMs,
          onChange: (slices) => {
            if (watch !== w || !latest || latest.signal.aborted) return;
            try {
              publish(latest, slices);
            } catch (e) {
              latest.log("error updating endpoints", { error: (e as Error).message });
            }
          },
          onError: (err) => latest?.log("kubernetes endpoint watch error", { error: err.message }),
        });
        watch = w;
      }
      if (watch.synced) publish(ctx, watch.objects());
      return isControlPlane(mt) ? undefined : { requeueAfterMs: pollMs };
    },
  };
}
