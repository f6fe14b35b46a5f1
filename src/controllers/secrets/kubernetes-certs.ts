/**
 * secrets.KubernetesController (control planes): KubernetesSecrets `k8s-certs`, the kubeconfigs machined writes for
 * the control plane and uses itself, each with its own client certificate from cluster.ca —
 * kube-controller-manager and kube-scheduler (CN = O = system:kube-controller-manager / system:kube-scheduler) and
 * the `localhost` admin (CN talos:admin, O system:masters) against the local endpoint, and the admin against the
 * cluster endpoint. Valid one year; issued again when the root changes and at half-life (upstream refreshes on a
 * timer of half the validity). Waits for a synced clock.
 */
import { generateKubeconfig } from "../../machinery/kubernetes/kubeconfig.js";
import { digest, issuedAnnotations, msUntilRenewal, reissueReason, requeueAfter } from "../../machinery/resources/issued.js";
import { pointer, read, readSpec } from "../../machinery/resources/read.js";
import {
  KubernetesCertsType,
  KubernetesRootType,
  SECRET_IDS,
  type KubernetesCertsSpec,
  type KubernetesRootSpec,
} from "../../machinery/resources/types/secrets.js";
import { TimeStatusType } from "../../machinery/resources/types/time.js";
import type { Controller } from "../../state/runtime/index.js";
import { KUBERNETES_CERT_VALIDITY_MS, type KubernetesCertsOptions } from "./kubernetes-dynamic-certs.js";

export function kubernetesCertsController(opts: KubernetesCertsOptions = {}): Controller {
  const ptr = pointer(KubernetesCertsType, SECRET_IDS.k8sCerts);
  const validity = opts.validityMs ?? KUBERNETES_CERT_VALIDITY_MS;
  return {
    name: "secrets.KubernetesController",
    inputs: [
      { ...pointer(KubernetesRootType, SECRET_IDS.k8s), kind: "weak" },
      { ...pointer(TimeStatusType, "node"), kind: "weak" },
    ],
    outputs: [{ type: KubernetesCertsType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const root = readSpec(ctx, KubernetesRootType, SECRET_IDS.k8s);
      if (!root) {
        ctx.destroy(ptr);
        return;
      }
      if (!readSpec(ctx, TimeStatusType, "node")?.synced) return;
      const existing = read(ctx, KubernetesCertsType, SECRET_IDS.k8sCerts);
      const inputs = digest({ root, validity });
      if (reissueReason(existing, inputs) === undefined) return { requeueAfterMs: msUntilRenewal(existing) };
      const spec = await kubeconfigs(root, validity);
      ctx.apply({ ...ptr, spec, annotations: issuedAnnotations(inputs, validity / 2) });
      return { requeueAfterMs: requeueAfter(validity / 2) };
    },
  };
}

async function kubeconfigs(root: KubernetesRootSpec, lifetimeMs: number): Promise<KubernetesCertsSpec> {
  if (!root.issuingCA) throw new Error("failed to generate controller manager kubeconfig: error getting Kubernetes CA: cluster.ca has no key on this node");
  const base = { clusterName: root.name, issuingCA: root.issuingCA, lifetimeMs };
  const accepted = root.acceptedCAs.map((c) => c.crt);
  const component = (who: string) =>
    generateKubeconfig({ ...base, acceptedCAs: accepted, commonName: who, organization: who, endpoint: root.localEndpoint, username: who, contextName: "default" });
  // Upstream's GenerateAdmin adds the issuing CA to the accepted ones again.
  const admin = (endpoint: string) =>
    generateKubeconfig({
      ...base,
      acceptedCAs: [...accepted, root.issuingCA!.crt],
      commonName: "talos:admin",
      organization: "system:masters",
      endpoint,
      username: "admin",
      contextName: "admin",
    });
  const [controllerManagerKubeconfig, schedulerKubeconfig, adminKubeconfig, localhostAdminKubeconfig] = await Promise.all([
    component("system:kube-controller-manager"),
    component("system:kube-scheduler"),
    admin(root.endpoint),
    admin(root.localEndpoint),
  ]);
  return { schedulerKubeconfig, controllerManagerKubeconfig, localhostAdminKubeconfig, adminKubeconfig };
}
