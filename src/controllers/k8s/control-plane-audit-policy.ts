/**
 * k8s.ControlPlaneAuditPolicyController (control planes): AuditPolicyConfigs `audit-policy`: cluster.apiServer.auditPolicy, or the default Metadata-level policy.
 * Destroyed when the node is not a control plane or has no cluster config.
 */
import { auditPolicyConfigSpec } from "../../machinery/kubernetes/control-plane-config.js";
import { hasClusterAndMachine } from "../../machinery/kubernetes/roots.js";
import { pointer } from "../../machinery/resources/read.js";
import { isControlPlane, machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { AUDIT_POLICY_ID, AuditPolicyConfigType } from "../../machinery/resources/types/k8s-controlplane.js";
import type { Controller } from "../../state/runtime/index.js";

export function controlPlaneAuditPolicyController(): Controller {
  const ptr = pointer(AuditPolicyConfigType, AUDIT_POLICY_ID);
  return {
    name: "k8s.ControlPlaneAuditPolicyController",
    inputs: [machineConfigInput],
    outputs: [{ type: AuditPolicyConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!hasClusterAndMachine(cfg) || !isControlPlane(cfg.machineType())) {
        ctx.destroy(ptr);
        return;
      }
      ctx.apply({ ...ptr, spec: auditPolicyConfigSpec(cfg) });
    },
  };
}
