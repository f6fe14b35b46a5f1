/**
 * k8s.ControlPlaneStaticPodController: the kube-apiserver, kube-controller-manager and kube-scheduler
 * pod manifests on control plane nodes (StaticPods `k8s`/<component>). Like upstream, pods are only
 * rendered once the local etcd service is healthy, since kube-apiserver uses that etcd; the
 * controller-manager and scheduler can be disabled with machine.controlPlane.<component>.disabled.
 */
import { K8S_NS, StaticPodType } from "../../machinery/resources/types/k8s.js";
import { RUNTIME_NS, ServiceType, type ServiceSpec } from "../../machinery/resources/types/runtime.js";
import type { Controller } from "../../state/runtime/index.js";
import { MACHINE_CONFIG_ID, isControlPlane, machineConfig, machineConfigInput, machineType, machineTypeInput } from "../../machinery/resources/types/config.js";
import { CONFIG_NS, MachineConfigType } from "../../machinery/resources/types/config.js";
import {
  APISERVER_ID,
  CONTROLLER_MANAGER_ID,
  SCHEDULER_ID,
  apiServerPod,
  controllerManagerPod,
  schedulerPod,
  type PodVersions,
} from "../../machinery/kubernetes/pod-templates.js";

export interface StaticPodOptions {
  /** Render pods without waiting for a healthy etcd service (default false: wait, as upstream). */
  skipEtcdWait?: boolean;
}

export function controlPlaneStaticPodController(opts: StaticPodOptions = {}): Controller {
  return {
    name: "k8s.ControlPlaneStaticPodController",
    inputs: [machineConfigInput, machineTypeInput, { namespace: RUNTIME_NS, type: ServiceType.type, id: "etcd", kind: "weak" }],
    outputs: [{ type: StaticPodType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const keep: string[] = [];
      const cfg = machineConfig(ctx);
      const etcd = ctx.get({ namespace: RUNTIME_NS, type: ServiceType.type, id: "etcd" })?.spec as ServiceSpec | undefined;
      const etcdReady = opts.skipEtcdWait || (etcd?.running === true && etcd.healthy);
      if (cfg?.cluster && isControlPlane(machineType(ctx)) && etcdReady) {
        // No separate secrets/config status resources here: both follow the machine config version.
        const version = String(ctx.get({ namespace: CONFIG_NS, type: MachineConfigType.type, id: MACHINE_CONFIG_ID })?.metadata.version ?? 0);
        const v: PodVersions = { secrets: version, config: version };
        const pods: [string, () => Record<string, unknown>][] = [[APISERVER_ID, () => apiServerPod(cfg, v)]];
        if (!cfg.machine?.controlPlane?.controllerManager?.disabled) pods.push([CONTROLLER_MANAGER_ID, () => controllerManagerPod(cfg, v)]);
        if (!cfg.machine?.controlPlane?.scheduler?.disabled) pods.push([SCHEDULER_ID, () => schedulerPod(cfg, v)]);
        for (const [id, render] of pods) {
          ctx.apply({ namespace: K8S_NS, type: StaticPodType.type, id, spec: render() });
          keep.push(id);
        }
      }
      ctx.cleanup(K8S_NS, StaticPodType.type, keep);
    },
  };
}
