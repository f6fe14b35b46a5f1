/**
 * The controller runtime with every controller this build runs. In local mode the network is only
 * observed; PID 1 (or a network namespace handed to us) manages it.
 */
import type { Logger } from "pino";
import { ControllerRuntime, type Controller } from "../state/runtime/index.js";
import type { State } from "../state/types.js";
import { networkControllers } from "../controllers/network/index.js";
import type { LeaseFn } from "../controllers/network/dhcp4.js";
import { coreControllers } from "../controllers/runtime/core.js";
import type { VolumeInfo } from "../controllers/block/volumes.js";
import { discoverDisks } from "../host/disks.js";
import { kubernetesControlPlaneControllers } from "../controllers/k8s/index.js";
import { rootOSController } from "../controllers/secrets/root-os.js";
import { rootEtcdController } from "../controllers/secrets/root-etcd.js";
import { apiCertSANsController } from "../controllers/secrets/api-cert-sans.js";
import { apiCertsController, type WorkerCertStatus } from "../controllers/secrets/api-certs.js";
import { trustdCertsController } from "../controllers/secrets/trustd-certs.js";
import { trustdServiceController } from "../controllers/runtime/trustd-service.js";
import type { TrustdService } from "../supervisor/services/trustd.js";
import { etcdCertsController } from "../controllers/secrets/etcd-certs.js";
import { etcdConfigController } from "../controllers/etcd/config.js";
import { etcdSpecController } from "../controllers/etcd/spec.js";
import { etcdServiceController } from "../controllers/etcd/service.js";
import { containerdServiceController } from "../controllers/runtime/containerd-service.js";
import { criServiceController } from "../controllers/cri/cri-service.js";
import { apiServiceController } from "../controllers/runtime/api-service.js";
import type { ApiEndpoint } from "../supervisor/services/apid.js";
import { criRegistriesConfigController } from "../controllers/cri/registries-config.js";
import { kubeletServiceController } from "../controllers/k8s/kubelet-service.js";
import { kernelParamDefaultsController } from "../controllers/runtime/kernel-param-defaults.js";
import { kernelParamConfigController } from "../controllers/runtime/kernel-param-config.js";
import { kernelParamSpecController } from "../controllers/runtime/kernel-param-spec.js";
import { hostSysctls, isNetnsSysctl } from "../host/sysctl.js";
import { realSyscalls } from "../host/syscalls.js";
import { CRI_REGISTRY_HOSTS, ETCD_DATA, ETCD_PKI, ETCD_RECOVERY_SNAPSHOT, SYSTEM_NAMESPACE } from "../machinery/paths.js";
import { readSpec } from "../machinery/resources/read.js";
import { ETCD_ID, EtcdSpecType } from "../machinery/resources/types/etcd.js";
import { KUBELET_KERNEL_DEFAULTS } from "../machinery/resources/types/kernel.js";
import { kubernetesManifestControllers } from "../controllers/k8s/manifest-controllers.js";
import { kubernetesStatusControllers } from "../controllers/k8s/status-controllers.js";
import type { UnmetCondition } from "../machinery/resources/types/runtime.js";
import { Ctr, CRI_CONTAINERD_PATHS, SYSTEM_CONTAINERD_PATHS, type ContainerdServiceOptions, type EtcdServiceOptions, type ServiceHost } from "../supervisor/index.js";

export interface ControllerWiring {
  state: State;
  log: Logger;
  stateDir: string;
  setReadiness(unmet: UnmetCondition[]): void;
  /** Manage the network: only for PID 1 or a named network namespace. */
  network: { manage: false } | { manage: true; pid1?: boolean; sandbox?: boolean; netns?: string; etcRoot?: string; dhcpLease?: LeaseFn };
  /** Disk-image files offered as install targets (local mode). */
  diskFiles?: () => string[];
  /** Root of the filesystem view the control plane's secrets and configs are written under; default "/". */
  kubernetesRoot?: string;
  /** The local etcd member id, when this node runs etcd. */
  etcdMemberId?: () => Promise<bigint>;
  /** Where the API listens, once it does (apid's health check). */
  apiEndpoint?: () => ApiEndpoint | undefined;
  /** trustd (built over the API edge's server by the entry wiring), run on control planes. */
  trustd?: TrustdService;
  /** What a worker without its API certificate waits for (the API identity shows it). */
  onWorkerCertStatus?: (s: WorkerCertStatus | undefined) => void;
  /** Where STATE and EPHEMERAL are (VolumeStatus); default the state folder as both (local mode). */
  volumes?: () => Promise<VolumeInfo[]>;
  /** The supervisor, for the controllers that run services; without it no service is started. */
  services?: ServiceHost;
  serviceOptions?: { containerd?: false | Omit<ContainerdServiceOptions, "stateDir">; etcd?: Partial<Omit<EtcdServiceOptions, "spec" | "pki" | "stateDir">> };
  /**
   * The node owns its filesystem view and kernel settings (PID 1, or a local-mode sandbox): upstream's paths, the
   * CRI containerd, etcd and the kubelet as containers, kernel parameters. Absent in plain local mode.
   */
  kubernetes?: {
    /** A sandbox shares the host's kernel and cgroup tree: only its own network's sysctls are set, the kubelet is shown the rest. */
    sandbox: boolean;
    cgroupV1: boolean;
    /** The kubelet's cgroup root in a sandbox (its own folder of the host's tree). */
    cgroupParent?: string;
    resolvConf: string;
  };
}

export function startControllers(w: ControllerWiring): ControllerRuntime {
  const runtime = new ControllerRuntime(w.state, {
    logger: (controller, msg, fields) => w.log.debug({ controller, ...fields }, msg),
  });
  const all: Controller[] = [
    ...networkControllers(w.network),
    ...coreControllers({
      stateDir: w.stateDir,
      volumes: w.volumes,
      setReadiness: w.setReadiness,
      // machined (the API included) is the one service every node must run; the lifecycle's services
      // condition covers the daemons the service controllers load.
      requiredServices: () => ["machined"],
      runtimeStatuses: () => runtime.statuses(),
      discoverDisks: () => discoverDisks({ files: w.diskFiles?.() ?? [] }),
      runsKubelet: () => w.kubernetes !== undefined,
      kubeletHost: w.kubernetes && { cgroupV1: w.kubernetes.cgroupV1, cgroupParent: w.kubernetes.cgroupParent, resolvConf: w.kubernetes.resolvConf },
      etcdMemberId: w.etcdMemberId,
    }),
    rootOSController(),
    rootEtcdController(),
    apiCertSANsController(),
    apiCertsController({ onWorkerStatus: w.onWorkerCertStatus }),
    trustdCertsController(),
    etcdCertsController(),
    etcdConfigController(),
    etcdSpecController(),
    ...kubernetesControlPlaneControllers({ root: w.kubernetesRoot }),
    ...kubernetesManifestControllers(),
    ...kubernetesStatusControllers(),
  ];
  if (w.services) all.push(apiServiceController({ services: w.services, endpoint: () => w.apiEndpoint?.() }));
  if (w.services && w.trustd) all.push(trustdServiceController({ services: w.services, service: w.trustd }));
  const k = w.kubernetes;
  if (k) {
    all.push(
      kernelParamDefaultsController(),
      kernelParamConfigController(),
      kernelParamSpecController({ sysctls: hostSysctls(), writable: k.sandbox ? isNetnsSysctl : undefined }),
      criRegistriesConfigController(),
    );
  }
  if (w.services && !k) {
    const containerd = w.serviceOptions?.containerd;
    // `containerd: false`: tests that run etcd alone.
    if (containerd !== false) all.push(containerdServiceController({ services: w.services, service: { ...containerd, stateDir: w.stateDir } }));
    all.push(etcdServiceController({ services: w.services, state: w.state, service: { ...w.serviceOptions?.etcd, stateDir: w.stateDir } }));
  }
  if (w.services && k) {
    // Upstream's layout: the system containerd for machined's own images, the CRI one for etcd, the kubelet and pods.
    const cri = new Ctr(CRI_CONTAINERD_PATHS.socket);
    const source = { hostsDir: CRI_REGISTRY_HOSTS };
    const health = w.serviceOptions?.containerd ? w.serviceOptions.containerd.health : undefined;
    all.push(
      containerdServiceController({ services: w.services, service: { paths: SYSTEM_CONTAINERD_PATHS, cri: false, health } }),
      criServiceController({ services: w.services, service: { restrictOomScoreAdj: k.sandbox, health } }),
      etcdServiceController({
        services: w.services,
        state: w.state,
        service: {
          ...w.serviceOptions?.etcd,
          stateDir: w.stateDir,
          dataDir: ETCD_DATA,
          pkiDir: ETCD_PKI,
          recoverySnapshotPath: ETCD_RECOVERY_SNAPSHOT,
          dependsOn: ["cri"],
          container: {
            ctr: cri,
            namespace: SYSTEM_NAMESPACE,
            image: () => readSpec(w.state, EtcdSpecType, ETCD_ID)?.image ?? "",
            source,
            cgroup: `${k.cgroupParent ?? ""}/podruntime/etcd`,
          },
        },
      }),
      kubeletServiceController({
        services: w.services,
        service: {
          ctr: cri,
          source,
          cgroup: `${k.cgroupParent ?? ""}/podruntime/kubelet`,
          fakeSysctls: k.sandbox ? KUBELET_KERNEL_DEFAULTS : undefined,
          sharedKubeletDir: { sys: realSyscalls() },
        },
      }),
    );
  }
  for (const c of all) runtime.register(c);
  runtime.start();
  return runtime;
}
