/**
 * The controller runtime with every controller this build runs. In local mode the network is only
 * observed; PID 1 (or a network namespace handed to us) manages it.
 */
import type { Logger } from "pino";
import { ControllerRuntime, type Controller } from "../state/runtime/index.js";
import type { State } from "../state/types.js";
import { networkControllers } from "../controllers/network/index.js";
import { coreControllers } from "../controllers/runtime/core.js";
import { discoverDisks } from "../host/disks.js";
import { staticPodFilesController } from "../controllers/k8s/static-pod-files.js";
import { rootOSController } from "../controllers/secrets/root-os.js";
import { rootEtcdController } from "../controllers/secrets/root-etcd.js";
import { apiCertSANsController } from "../controllers/secrets/api-cert-sans.js";
import { apiCertsController } from "../controllers/secrets/api-certs.js";
import { etcdCertsController } from "../controllers/secrets/etcd-certs.js";
import { etcdConfigController } from "../controllers/etcd/config.js";
import { etcdSpecController } from "../controllers/etcd/spec.js";
import { etcdServiceController } from "../controllers/etcd/service.js";
import { containerdServiceController } from "../controllers/runtime/containerd-service.js";
import { kubernetesStatusControllers } from "../controllers/k8s/status-controllers.js";
import type { UnmetCondition } from "../machinery/resources/types/runtime.js";
import type { ContainerdServiceOptions, EtcdServiceOptions, ServiceHost } from "../supervisor/index.js";

export interface ControllerWiring {
  state: State;
  log: Logger;
  stateDir: string;
  setReadiness(unmet: UnmetCondition[]): void;
  /** Manage the network: only for PID 1 or a named network namespace. */
  network: { manage: false } | { manage: true; pid1?: boolean; sandbox?: boolean; netns?: string; etcRoot?: string };
  /** Disk-image files offered as install targets (local mode). */
  diskFiles?: () => string[];
  /** The kubelet's static pod folder the control plane manifests are written into. */
  manifestsDir?: string;
  /** The local etcd member id, when this node runs etcd. */
  etcdMemberId?: () => Promise<bigint>;
  /** The supervisor, for the controllers that run services; without it no service is started. */
  services?: ServiceHost;
  serviceOptions?: { containerd?: false | Omit<ContainerdServiceOptions, "stateDir">; etcd?: Partial<Omit<EtcdServiceOptions, "spec" | "pki" | "stateDir">> };
}

export function startControllers(w: ControllerWiring): ControllerRuntime {
  const runtime = new ControllerRuntime(w.state, {
    logger: (controller, msg, fields) => w.log.debug({ controller, ...fields }, msg),
  });
  const all: Controller[] = [
    ...networkControllers(w.network),
    ...coreControllers({
      stateDir: w.stateDir,
      setReadiness: w.setReadiness,
      // machined (the API included) is the one service every node must run; the lifecycle's services
      // condition covers the daemons the service controllers load.
      requiredServices: () => ["machined"],
      runtimeStatuses: () => runtime.statuses(),
      discoverDisks: () => discoverDisks({ files: w.diskFiles?.() ?? [] }),
      runsKubelet: () => false,
      etcdMemberId: w.etcdMemberId,
    }),
    rootOSController(),
    rootEtcdController(),
    apiCertSANsController(),
    apiCertsController(),
    etcdCertsController(),
    etcdConfigController(),
    etcdSpecController(),
    ...kubernetesStatusControllers(),
  ];
  if (w.services) {
    const containerd = w.serviceOptions?.containerd;
    // `containerd: false`: tests that run etcd alone.
    if (containerd !== false) all.push(containerdServiceController({ services: w.services, service: { ...containerd, stateDir: w.stateDir } }));
    all.push(etcdServiceController({ services: w.services, state: w.state, service: { ...w.serviceOptions?.etcd, stateDir: w.stateDir } }));
  }
  if (w.manifestsDir) all.push(staticPodFilesController({ dir: w.manifestsDir }));
  for (const c of all) runtime.register(c);
  runtime.start();
  return runtime;
}
