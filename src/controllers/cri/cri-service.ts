/**
 * cri.ServiceController: runs the CRI containerd (service `cri`) on a configured node that runs Kubernetes, with
 * upstream's paths: socket /run/containerd/containerd.sock, root /var/lib/containerd, config /etc/cri/containerd.toml,
 * CNI from /opt/cni/bin and /etc/cni/net.d, registry mirrors from /etc/cri/conf.d/hosts, the pause image as the pod
 * sandbox. etcd and the kubelet run in its `system` namespace, pods in `k8s.io`.
 */
import { PAUSE_IMAGE } from "../../machinery/generate/constants.js";
import { CNI_BIN, CNI_CONF, CRI_REGISTRY_HOSTS } from "../../machinery/paths.js";
import { machineType, machineTypeInput } from "../../machinery/resources/types/config.js";
import { ContainerdService, CRI_CONTAINERD_PATHS, type ContainerdServiceOptions } from "../../supervisor/index.js";
import type { ServiceHost } from "../../supervisor/types.js";
import type { Controller } from "../../state/runtime/index.js";

export interface CRIServiceControllerOptions {
  services: ServiceHost;
  /** Host differences (e.g. restrictOomScoreAdj where negative scores are refused) and test timings. */
  service?: Partial<ContainerdServiceOptions>;
}

export function criServiceController(o: CRIServiceControllerOptions): Controller {
  return {
    name: "cri.ServiceController",
    inputs: [machineTypeInput],
    outputs: [],
    async reconcile(ctx) {
      const t = machineType(ctx);
      if (!t || t === "unknown") {
        await o.services.remove("cri");
        return;
      }
      const service = new ContainerdService({
        id: "cri",
        paths: CRI_CONTAINERD_PATHS,
        cri: true,
        cniBinDir: CNI_BIN,
        cniConfDir: CNI_CONF,
        registryConfigPath: CRI_REGISTRY_HOSTS,
        sandboxImage: PAUSE_IMAGE,
        ...o.service,
      });
      await o.services.ensure(service, "cri");
    },
  };
}
