/**
 * k8s.ControlPlaneAPIServerController (control planes): APIServerConfigs `kube-apiserver`: image, endpoint, the local etcd, port, service CIDRs, extra args/volumes/env, advertise address, resources.
 * Destroyed when the node is not a control plane or has no cluster config.
 */
import { apiServerConfigSpec } from "../../machinery/kubernetes/control-plane-config.js";
import { hasClusterAndMachine } from "../../machinery/kubernetes/roots.js";
import { pointer } from "../../machinery/resources/read.js";
import { isControlPlane, machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { APISERVER_ID, APIServerConfigType } from "../../machinery/resources/types/k8s-controlplane.js";
import type { Controller } from "../../state/runtime/index.js";

export function controlPlaneAPIServerController(): Controller {
  const ptr = pointer(APIServerConfigType, APISERVER_ID);
  return {
    name: "k8s.ControlPlaneAPIServerController",
    inputs: [machineConfigInput],
    outputs: [{ type: APIServerConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!hasClusterAndMachine(cfg) || !isControlPlane(cfg.machineType())) {
        ctx.destroy(ptr);
        return;
      }
      ctx.apply({ ...ptr, spec: apiServerConfigSpec(cfg) });
    },
  };
}
