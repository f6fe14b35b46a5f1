/** Defaults `talosctl gen config` uses for the Talos release we implement (pkg/machinery/constants at v1.14). */
import { API_TAG } from "../version.js";

/** Kubernetes version Talos v1.14 defaults to (constants.DefaultKubernetesVersion at the v1.14 beta). */
export const DEFAULT_KUBERNETES_VERSION = "1.37.0-rc.1";
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

export const POD_CIDR_V4 = "10.244.0.0/16";
export const SERVICE_CIDR_V4 = "10.96.0.0/12";
export const POD_CIDR_V6 = "fc00:db8:10::/56";
export const SERVICE_CIDR_V6 = "fc00:db8:20::/112";

export const LABEL_CONTROL_PLANE = "node-role.kubernetes.io/control-plane";
export const LABEL_EXCLUDE_FROM_LB = "node.kubernetes.io/exclude-from-external-load-balancers";

export const FLANNEL_BACKEND = "vxlan";
export const FLANNEL_BACKEND_PORT = 4789;
