/**
 * k8s.ControlPlaneAuthorizationPolicyController (control planes): AuthorizationConfigs `authorization`: the API server image and its authorizers (cluster.apiServer.authorizationConfig with Node and RBAC always present; none for an API server older than 1.29).
 * Destroyed when the node is not a control plane or has no cluster config.
 */
import { authorizationConfigSpec } from "../../machinery/kubernetes/control-plane-config.js";
import { hasClusterAndMachine } from "../../machinery/kubernetes/roots.js";
import { pointer } from "../../machinery/resources/read.js";
import { isControlPlane, machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { AUTHORIZATION_ID, AuthorizationConfigType } from "../../machinery/resources/types/k8s-controlplane.js";
import type { Controller } from "../../state/runtime/index.js";

export function controlPlaneAuthorizationController(): Controller {
  const ptr = pointer(AuthorizationConfigType, AUTHORIZATION_ID);
  return {
    name: "k8s.ControlPlaneAuthorizationPolicyController",
    inputs: [machineConfigInput],
    outputs: [{ type: AuthorizationConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!hasClusterAndMachine(cfg) || !isControlPlane(cfg.machineType())) {
        ctx.destroy(ptr);
        return;
      }
      ctx.apply({ ...ptr, spec: authorizationConfigSpec(cfg) });
    },
  };
}
