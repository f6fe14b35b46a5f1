/**
 * k8s.ManifestController: renders the bootstrap manifests (bootstrap token, CSR bindings, flannel, kube-proxy,
 * CoreDNS, in-cluster kubeconfig, Talos node RBAC) into Manifest resources `controlplane`/<id>, from
 * BootstrapManifestsConfig and the Kubernetes root secrets (the bootstrap token). Removes what it no longer renders
 * (e.g. `05-flannel` once `cni` is `none`); the objects already in the cluster stay, as upstream.
 */
import { renderBootstrapManifests } from "../../machinery/kubernetes/bootstrap-manifests.js";
import { readSpec } from "../../machinery/resources/read.js";
import { BOOTSTRAP_MANIFESTS_CONFIG_ID, BootstrapManifestsConfigType, CONTROLPLANE_NS, ManifestType } from "../../machinery/resources/types/k8s-manifests.js";
import { KubernetesRootType, SECRET_IDS } from "../../machinery/resources/types/secrets.js";
import type { Controller } from "../../state/runtime/index.js";

export function manifestController(): Controller {
  return {
    name: "k8s.ManifestController",
    inputs: [
      { namespace: CONTROLPLANE_NS, type: BootstrapManifestsConfigType.type, kind: "weak" },
      { namespace: KubernetesRootType.defaultNamespace, type: KubernetesRootType.type, id: SECRET_IDS.k8s, kind: "weak" },
    ],
    // Shared: the ExtraManifestController writes Manifests too, each removing only its own.
    outputs: [{ type: ManifestType.type, kind: "shared" }],
    reconcile(ctx) {
      const cfg = readSpec(ctx, BootstrapManifestsConfigType, BOOTSTRAP_MANIFESTS_CONFIG_ID);
      const root = readSpec(ctx, KubernetesRootType, SECRET_IDS.k8s);
      if (!cfg || !root) {
        ctx.cleanup(CONTROLPLANE_NS, ManifestType.type, []);
        return;
      }
      const rendered = renderBootstrapManifests(cfg, root);
      for (const m of rendered) ctx.apply({ namespace: CONTROLPLANE_NS, type: ManifestType.type, id: m.id, spec: { items: m.objects } });
      ctx.cleanup(CONTROLPLANE_NS, ManifestType.type, rendered.map((m) => m.id));
    },
  };
}
