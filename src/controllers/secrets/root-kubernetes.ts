/**
 * secrets.RootKubernetesController (control planes): KubernetesRootSecrets `k8s`, everything the control plane's
 * Kubernetes certificates, kubeconfigs and encryption config are made from — the cluster name and endpoint, the
 * local endpoint the components use (KubePrism https://127.0.0.1:<port> when enabled, else
 * https://localhost:<local API server port>), the API server's service IPs (the first address of each service
 * CIDR), cluster.ca (its key kept; accepted CAs = cluster.acceptedCAs + cluster.ca), the aggregator CA, the
 * service account key, the encryption secrets and the bootstrap token split from cluster.token.
 * Errors name the missing piece as upstream does.
 */
import { isControlPlane, machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { KubernetesRootType, SECRET_IDS } from "../../machinery/resources/types/secrets.js";
import { pointer } from "../../machinery/resources/read.js";
import type { Controller } from "../../state/runtime/index.js";
import { hasClusterAndMachine, kubernetesRoot } from "../../machinery/kubernetes/roots.js";

export function rootKubernetesController(): Controller {
  const ptr = pointer(KubernetesRootType, SECRET_IDS.k8s);
  return {
    name: "secrets.RootKubernetesController",
    inputs: [machineConfigInput],
    outputs: [{ type: KubernetesRootType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!hasClusterAndMachine(cfg) || !isControlPlane(cfg.machineType())) {
        ctx.destroy(ptr);
        return;
      }
      ctx.apply({ ...ptr, spec: kubernetesRoot(cfg) });
    },
  };
}
