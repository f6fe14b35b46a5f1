/**
 * k8s.ControlPlaneStaticPodController (control planes): StaticPods `k8s`/kube-apiserver, kube-controller-manager
 * and kube-scheduler, rendered from the component configs (namespace `controlplane`) once the files they mount
 * are written (SecretStatuses and ConfigStatuses `static-pods`) and the local etcd service is healthy — the API
 * server uses that etcd. Each pod is annotated with talos.dev/secrets-version, talos.dev/config-version (its
 * config resource's version; `talosctl upgrade-k8s` waits for a pod carrying it) and, on the API server,
 * talos.dev/config-file-version, so the kubelet restarts a pod whenever what it runs with changes.
 * As upstream: without the etcd service or the statuses the pods are removed; an unhealthy etcd keeps them as they
 * are; a disabled controller-manager or scheduler has no pod.
 */
import { apiServerPod, controllerManagerPod, schedulerPod, type PodVersions } from "../../machinery/kubernetes/pod-templates.js";
import { pointer, read } from "../../machinery/resources/read.js";
import { K8S_NS, StaticPodType, type PodManifest } from "../../machinery/resources/types/k8s.js";
import {
  APISERVER_ID,
  APIServerConfigType,
  CONTROLLER_MANAGER_ID,
  ControllerManagerConfigType,
  ConfigStatusType,
  SCHEDULER_ID,
  SchedulerConfigType,
  SecretsStatusType,
  STATIC_PODS_STATUS_ID,
} from "../../machinery/resources/types/k8s-controlplane.js";
import { RUNTIME_NS, ServiceType } from "../../machinery/resources/types/runtime.js";
import type { Controller } from "../../state/runtime/index.js";

export function controlPlaneStaticPodController(): Controller {
  return {
    name: "k8s.ControlPlaneStaticPodController",
    inputs: [
      ...[APIServerConfigType, ControllerManagerConfigType, SchedulerConfigType].map((t) => ({
        namespace: t.defaultNamespace,
        type: t.type,
        kind: "weak" as const,
      })),
      { ...pointer(SecretsStatusType, STATIC_PODS_STATUS_ID), kind: "weak" },
      { ...pointer(ConfigStatusType, STATIC_PODS_STATUS_ID), kind: "weak" },
      { namespace: RUNTIME_NS, type: ServiceType.type, id: "etcd", kind: "weak" },
    ],
    outputs: [{ type: StaticPodType.type, kind: "shared" }],
    reconcile(ctx) {
      const etcd = read(ctx, ServiceType, "etcd", RUNTIME_NS);
      const secrets = read(ctx, SecretsStatusType, STATIC_PODS_STATUS_ID);
      const configs = read(ctx, ConfigStatusType, STATIC_PODS_STATUS_ID);
      if (!etcd || !secrets || !configs) {
        ctx.cleanup(K8S_NS, StaticPodType.type, []);
        return;
      }
      if (!etcd.spec.healthy) return;
      const keep: string[] = [];
      const put = (id: string, pod: PodManifest) => {
        ctx.apply({ namespace: K8S_NS, type: StaticPodType.type, id, spec: pod });
        keep.push(id);
      };
      const versions = (config: { metadata: { version: number } }): PodVersions => ({
        secrets: secrets.spec.version,
        config: String(config.metadata.version),
        configFile: configs.spec.version,
      });
      const apiServer = read(ctx, APIServerConfigType, APISERVER_ID);
      if (apiServer) put(APISERVER_ID, wrap(APIServerConfigType.type, () => apiServerPod(apiServer.spec, versions(apiServer))));
      const cm = read(ctx, ControllerManagerConfigType, CONTROLLER_MANAGER_ID);
      if (cm?.spec.enabled) put(CONTROLLER_MANAGER_ID, wrap(ControllerManagerConfigType.type, () => controllerManagerPod(cm.spec, versions(cm))));
      const scheduler = read(ctx, SchedulerConfigType, SCHEDULER_ID);
      if (scheduler?.spec.enabled) put(SCHEDULER_ID, wrap(SchedulerConfigType.type, () => schedulerPod(scheduler.spec, versions(scheduler))));
      ctx.cleanup(K8S_NS, StaticPodType.type, keep);
    },
  };
}

/** A pod that cannot be rendered (a denied extra arg, a bad quantity) fails the reconcile, naming its config type. */
function wrap(configType: string, render: () => PodManifest): PodManifest {
  try {
    return render();
  } catch (err) {
    throw new Error(`error updating static pod for ${JSON.stringify(configType)}: ${(err as Error).message}`);
  }
}
