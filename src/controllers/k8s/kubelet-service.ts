/**
 * k8s.KubeletServiceController: runs the kubelet as KubeletSpec and KubeletSecrets say. On every change of either
 * (upstream: the kubelet is restarted on each), the service is replaced by one carrying the new files and flags:
 * its start writes the bootstrap kubeconfig (token = cluster.token), the CA, kubelet.yaml, drops a client certificate
 * of another node name and the self-signed serving certificate, points an existing kubeconfig-kubelet at the
 * endpoint, pulls the image and starts the container. No spec (a node without Kubernetes) → no kubelet.
 */
import { stringify } from "yaml";
import { digest } from "../../machinery/resources/issued.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";
import { K8S_NS, KubeletSpecType, type KubeletSpecSpec } from "../../machinery/resources/types/k8s.js";
import { KubeletSecretsType, SECRET_IDS, type KubeletSecretsSpec } from "../../machinery/resources/types/secrets.js";
import { KubeletService, type KubeletRun, type KubeletServiceOptions } from "../../supervisor/index.js";
import type { ServiceHost } from "../../supervisor/types.js";
import type { Controller } from "../../state/runtime/index.js";

export interface KubeletServiceControllerOptions {
  services: ServiceHost;
  /** Where and how the kubelet runs (CRI containerd, mirrors, sandbox sysctls); `run` comes from the specs. */
  service: Omit<KubeletServiceOptions, "run">;
}

export function kubeletServiceController(o: KubeletServiceControllerOptions): Controller {
  return {
    name: "k8s.KubeletServiceController",
    inputs: [
      { ...pointer(KubeletSpecType, "kubelet"), kind: "weak" },
      { ...pointer(KubeletSecretsType, SECRET_IDS.kubelet), kind: "weak" },
    ],
    outputs: [],
    async reconcile(ctx) {
      const spec = readSpec(ctx, KubeletSpecType, "kubelet", K8S_NS);
      const secrets = readSpec(ctx, KubeletSecretsType, SECRET_IDS.kubelet);
      if (!spec || !secrets) {
        await o.services.remove("kubelet");
        return;
      }
      const run = kubeletRun(spec, secrets);
      await o.services.ensure(new KubeletService({ ...o.service, run }), digest(run));
    },
  };
}

/** Everything the kubelet is started with, derived from its two resources. */
export function kubeletRun(spec: KubeletSpecSpec, secrets: KubeletSecretsSpec): KubeletRun {
  const caPem = secrets.acceptedCAs.map((c) => c.crt.trim()).join("\n") + "\n";
  const skipRegistration = !spec.args.some((a) => a.startsWith("--bootstrap-kubeconfig="));
  return {
    image: spec.image,
    args: spec.args,
    extraMounts: spec.extraMounts.map((m) => ({ type: m.type || "bind", src: m.source, dst: m.destination, options: m.options.length ? m.options : ["rbind", "rshared", "rw"] })),
    configYaml: stringify(spec.config, { lineWidth: 0 }),
    bootstrapKubeconfig: skipRegistration ? undefined : bootstrapKubeconfig(secrets, caPem),
    caPem,
    expectedNodename: spec.expectedNodename,
    endpoint: secrets.endpoint,
  };
}

/** The kubeconfig the kubelet uses for TLS bootstrap: the bootstrap token against the API server endpoint. */
export function bootstrapKubeconfig(secrets: KubeletSecretsSpec, caPem: string): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "local", cluster: { server: secrets.endpoint, "certificate-authority-data": Buffer.from(caPem).toString("base64") } }],
    users: [{ name: "kubelet@local", user: { token: `${secrets.bootstrapTokenID}.${secrets.bootstrapTokenSecret}` } }],
    contexts: [{ name: "kubelet@local", context: { cluster: "local", user: "kubelet@local" } }],
    "current-context": "kubelet@local",
  });
}
