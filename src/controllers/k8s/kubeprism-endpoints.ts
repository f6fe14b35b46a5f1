/**
 * k8s.KubePrismEndpointsController: KubePrismEndpoints `k8s`/`k8s-cluster`, every API server address this node
 * could use: the cluster endpoint, the local API server on control planes, and the discovered control plane
 * members (each address with its API server port).
 */
import { kubePrismEndpoints } from "../../machinery/kubernetes/kubeprism.js";
import { pointer, readAll } from "../../machinery/resources/read.js";
import { MemberType } from "../../machinery/resources/types/cluster.js";
import { isControlPlane, machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { KUBEPRISM_ENDPOINTS_ID, KubePrismEndpointsType } from "../../machinery/resources/types/k8s-status.js";
import type { Controller } from "../../state/runtime/index.js";

export function kubePrismEndpointsController(): Controller {
  const ptr = pointer(KubePrismEndpointsType, KUBEPRISM_ENDPOINTS_ID);
  return {
    name: "k8s.KubePrismEndpointsController",
    inputs: [machineConfigInput, { namespace: MemberType.defaultNamespace, type: MemberType.type, kind: "weak" }],
    outputs: [{ type: KubePrismEndpointsType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!cfg?.machine || !cfg.cluster) {
        ctx.destroy(ptr);
        return;
      }
      const members = readAll(ctx, MemberType).map((m) => m.spec);
      ctx.apply({ ...ptr, spec: { endpoints: kubePrismEndpoints(cfg, isControlPlane(cfg.machineType()), members) } });
    },
  };
}
