/** Defaults `talosctl gen config` uses for the Talos release we implement (pkg/machinery/constants at v1.14). */
import { API_TAG } from "../version.js";

/**
 * The Kubernetes version `gen config` writes and a config without images runs: v1.37.2, the release the component
 * images built by `make kube-images` carry (image/kube/versions.env). Upstream v1.14 named a 1.37 release candidate.
 */
export const DEFAULT_KUBERNETES_VERSION = "1.37.2";
export const DEFAULT_TALOS_VERSION = API_TAG;
/** Upstream defaults to an Image Factory installer; this project installs from the plain installer image. */
export const DEFAULT_INSTALLER_IMAGE = `ghcr.io/siderolabs/installer:${API_TAG}`;
export const DEFAULT_INSTALL_DISK = "/dev/sda";
export const DEFAULT_DNS_DOMAIN = "cluster.local";
export const DEFAULT_CONTROL_PLANE_PORT = 6443;
export const DEFAULT_KUBEPRISM_PORT = 7445;
export const DEFAULT_DISCOVERY_ENDPOINT = "https://discovery.talos.dev/";
export const DEFAULT_FILESYSTEM_TRIM_INTERVAL = "168h0m0s";

export const KUBELET_IMAGE = "ghcr.io/siderolabs/kubelet";
export const KUBE_APISERVER_IMAGE = "registry.k8s.io/kube-apiserver";
export const KUBE_CONTROLLER_MANAGER_IMAGE = "registry.k8s.io/kube-controller-manager";
export const KUBE_SCHEDULER_IMAGE = "registry.k8s.io/kube-scheduler";
export const KUBE_PROXY_IMAGE = "registry.k8s.io/kube-proxy";
/** etcd runs from this image (cluster.etcd.image overrides it); 3.7 is what Kubernetes 1.37 is built against. */
export const ETCD_IMAGE = "registry.k8s.io/etcd";
export const DEFAULT_ETCD_VERSION = "v3.7.3";
export const COREDNS_IMAGE = "registry.k8s.io/coredns/coredns";
export const DEFAULT_COREDNS_VERSION = "v1.14.6";
export const FLANNEL_IMAGE = "ghcr.io/siderolabs/flannel";
export const DEFAULT_FLANNEL_VERSION = "v0.28.9";
/** The pod sandbox image the CRI runs (upstream's DefaultSandboxImage). */
export const PAUSE_IMAGE = "registry.k8s.io/pause:3.10.2";

export const POD_CIDR_V4 = "10.244.0.0/16";
export const SERVICE_CIDR_V4 = "10.96.0.0/12";
export const POD_CIDR_V6 = "fc00:db8:10::/56";
export const SERVICE_CIDR_V6 = "fc00:db8:20::/112";

export const LABEL_CONTROL_PLANE = "node-role.kubernetes.io/control-plane";
export const LABEL_EXCLUDE_FROM_LB = "node.kubernetes.io/exclude-from-external-load-balancers";

export const FLANNEL_BACKEND = "vxlan";
export const FLANNEL_BACKEND_PORT = 4789;
