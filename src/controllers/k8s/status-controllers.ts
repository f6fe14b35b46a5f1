/**
 * The controllers that tell what this node's Kubernetes side looks like: node IPs, the Node status, static pod
 * statuses, control plane endpoints and KubePrism; and the ones that make the Node carry this node's labels,
 * annotations, taints and cordon. One list for the wiring, with the host capabilities they use injectable for tests.
 */
import type { Files } from "../../host/files/index.js";
import type { KubeApiFactory, KubeWriterFactory } from "../../host/kube/api.js";
import type { KubeletPodsFetcher } from "../../host/kube/kubelet.js";
import type { HostLookup } from "../../host/lookup.js";
import type { LoadBalancerFactory } from "../../host/tcp-balancer.js";
import type { Controller } from "../../state/runtime/index.js";
import { endpointController } from "./endpoint.js";
import { kubeletStaticPodController } from "./kubelet-static-pod.js";
import { kubePrismController } from "./kubeprism.js";
import { kubePrismConfigController } from "./kubeprism-config.js";
import { kubePrismEndpointsController } from "./kubeprism-endpoints.js";
import { nodeIPController } from "./nodeip.js";
import { nodeIPConfigController } from "./nodeip-config.js";
import { nodeStatusController } from "./node-status.js";
import { nodeAnnotationSpecController } from "./node-annotation-spec.js";
import { nodeApplyController } from "./node-apply.js";
import { nodeCordonedSpecController } from "./node-cordoned-spec.js";
import { nodeLabelSpecController } from "./node-label-spec.js";
import { nodeTaintSpecController } from "./node-taint-spec.js";
import { staticEndpointController } from "./static-endpoint.js";

export interface KubernetesStatusOptions {
  /** Folder the node paths (/etc/kubernetes, /var/lib/kubelet) are under; default "/". */
  root?: string;
  files?: Files;
  kubeApi?: KubeApiFactory;
  /** The writing client (NodeApplyController). */
  kubernetes?: KubeWriterFactory;
  fetchKubeletPods?: KubeletPodsFetcher;
  lookup?: HostLookup;
  balancer?: LoadBalancerFactory;
}

export function kubernetesStatusControllers(opts: KubernetesStatusOptions = {}): Controller[] {
  const io = { root: opts.root, files: opts.files };
  return [
    nodeIPConfigController(),
    nodeIPController(),
    nodeStatusController({ ...io, kubeApi: opts.kubeApi }),
    nodeLabelSpecController(),
    nodeAnnotationSpecController(),
    nodeTaintSpecController(),
    nodeCordonedSpecController(),
    nodeApplyController({ ...io, connect: opts.kubernetes }),
    kubeletStaticPodController({ ...io, fetchPods: opts.fetchKubeletPods }),
    staticEndpointController({ lookup: opts.lookup }),
    endpointController({ ...io, kubeApi: opts.kubeApi }),
    kubePrismEndpointsController(),
    kubePrismConfigController(),
    kubePrismController({ balancer: opts.balancer }),
  ];
}
