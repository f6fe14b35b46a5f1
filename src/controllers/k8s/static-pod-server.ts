/**
 * k8s.StaticPodServerController (every node): serves every StaticPod resource as one YAML `PodList` over HTTP on
 * 127.0.0.1 at a random port, and publishes the URL in StaticPodServerStatuses `static-pod-server-status`; the
 * kubelet polls it as its `staticPodURL`, so static pods never touch a manifests folder. The server starts with
 * the first reconcile and stops with the runtime; the list is rebuilt on every StaticPod change.
 */
import { loopbackHttp, type LoopbackHttp, type LoopbackServer } from "../../host/loopback-http.js";
import { staticPodListYaml } from "../../machinery/kubernetes/static-pod-list.js";
import { pointer, readAll } from "../../machinery/resources/read.js";
import { K8S_NS, StaticPodType } from "../../machinery/resources/types/k8s.js";
import { STATIC_POD_SERVER_STATUS_ID, StaticPodServerStatusType } from "../../machinery/resources/types/k8s-controlplane.js";
import type { Controller } from "../../state/runtime/index.js";

export interface StaticPodServerOptions {
  http?: LoopbackHttp;
}

export function staticPodServerController(opts: StaticPodServerOptions = {}): Controller {
  const http = opts.http ?? loopbackHttp;
  const ptr = pointer(StaticPodServerStatusType, STATIC_POD_SERVER_STATUS_ID);
  let server: LoopbackServer | undefined;
  let failure: Error | undefined;
  let podList: string | undefined;
  const versions = new Map<string, number>();
  return {
    name: "k8s.StaticPodServerController",
    inputs: [{ namespace: K8S_NS, type: StaticPodType.type, kind: "weak" }],
    outputs: [{ type: StaticPodServerStatusType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      if (failure) {
        const err = failure;
        failure = undefined;
        server = undefined;
        throw new Error(`http server closed unexpectedly: ${err.message}`);
      }
      const pods = readAll(ctx, StaticPodType);
      for (const p of pods) {
        const old = versions.get(p.metadata.id);
        if (old === p.metadata.version) continue;
        versions.set(p.metadata.id, p.metadata.version);
        ctx.log(old === undefined ? "rendered new static pod" : "rendered updated static pod", { id: p.metadata.id, version: p.metadata.version });
      }
      for (const id of versions.keys()) {
        if (pods.some((p) => p.metadata.id === id)) continue;
        versions.delete(id);
        ctx.log("removed static pod", { id });
      }
      podList = staticPodListYaml(pods.map((p) => p.spec));
      if (!server) {
        const started = await http.serve(
          () => (podList === undefined ? { status: 500, body: "Internal Server Error\n" } : { status: 200, body: podList }),
          (err) => {
            failure = err;
            ctx.log("static pod server failed", { error: err.message });
          },
        );
        server = started;
        if (ctx.signal.aborted) await started.close();
        else ctx.signal.addEventListener("abort", () => void started.close(), { once: true });
      }
      ctx.apply({ ...ptr, spec: { url: server.url } });
    },
  };
}
