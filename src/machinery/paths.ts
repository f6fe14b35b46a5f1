/**
 * Where things live on a node, as upstream's constants name them (pkg/machinery/constants). The node runs
 * Kubernetes only where it owns its filesystem view (PID 1, or local mode in a sandbox with these paths
 * bind-mounted from its state folder), so code uses these absolute paths; controllers and services that write
 * files take a `root` option (default "/") for tests.
 */
import { join } from "node:path";

/** Prefix a node path with a root folder ("/" on a real node). */
export function under(root: string, path: string): string {
  return root === "/" ? path : join(root, path);
}

// containerd: the system instance (machined's own services) and the CRI instance (kubelet, etcd, pods).
export const SYSTEM_CONTAINERD_SOCKET = "/system/run/containerd/containerd.sock"; // SystemContainerdAddress
export const SYSTEM_CONTAINERD_STATE = "/system/run/containerd";
export const SYSTEM_CONTAINERD_ROOT = "/system/var/lib/containerd";
export const CRI_CONTAINERD_SOCKET = "/run/containerd/containerd.sock"; // CRIContainerdAddress
export const CRI_CONTAINERD_CONFIG = "/etc/cri/containerd.toml"; // CRIContainerdConfig
export const CRI_CONFIG_PARTS = "/etc/cri/conf.d"; // CRIConfdPath
export const CRI_REGISTRY_HOSTS = "/etc/cri/conf.d/hosts"; // CRIRegistryConfigPart hosts.toml folder
export const CRI_CONTAINERD_ROOT = "/var/lib/containerd";
export const CRI_CONTAINERD_STATE = "/run/containerd";
export const SYSTEM_NAMESPACE = "system"; // SystemContainerdNamespace
export const K8S_NAMESPACE = "k8s.io"; // K8sContainerdNamespace

// etcd
export const ETCD_DATA = "/var/lib/etcd"; // EtcdDataPath
export const ETCD_PKI = "/system/secrets/etcd"; // EtcdPKIPath
export const ETCD_RECOVERY_SNAPSHOT = "/var/lib/etcd.snapshot"; // EtcdRecoverySnapshotPath

// kubelet
export const KUBERNETES_CONFIG = "/etc/kubernetes";
export const KUBELET_CONFIG_FILE = "/etc/kubernetes/kubelet.yaml";
export const KUBELET_BOOTSTRAP_KUBECONFIG = "/etc/kubernetes/bootstrap-kubeconfig";
export const KUBELET_KUBECONFIG = "/etc/kubernetes/kubeconfig-kubelet";
export const KUBERNETES_CA = "/etc/kubernetes/pki/ca.crt";
export const KUBELET_DIR = "/var/lib/kubelet";
export const KUBELET_PKI = "/var/lib/kubelet/pki";
export const POD_LOGS = "/var/log/pods";
export const CONTAINER_LOGS = "/var/log/containers";
export const CNI_CONF = "/etc/cni/net.d";
export const CNI_BIN = "/opt/cni/bin";
export const MANIFESTS_DIR = "/etc/kubernetes/manifests";

// control plane
export const KUBERNETES_STATIC_SECRETS = "/system/secrets/kubernetes"; // KubebernetesStaticSecretsDir
export const KUBERNETES_STATIC_CONFIG = "/system/config/kubernetes"; // KubebernetesStaticConfigDir
export const APISERVER_SECRETS = "/system/secrets/kubernetes/kube-apiserver"; // KubernetesAPIServerSecretsDir
export const CONTROLLER_MANAGER_SECRETS = "/system/secrets/kubernetes/kube-controller-manager"; // KubernetesControllerManagerSecretsDir
export const SCHEDULER_SECRETS = "/system/secrets/kubernetes/kube-scheduler"; // KubernetesSchedulerSecretsDir
export const APISERVER_CONFIG = "/system/config/kubernetes/kube-apiserver"; // KubernetesAPIServerConfigDir
export const SCHEDULER_CONFIG = "/system/config/kubernetes/kube-scheduler"; // KubernetesSchedulerConfigDir
export const AUDIT_LOG_DIR = "/var/log/audit/kube"; // KubernetesAuditLogDir

// the node's writable views over the read-only root (upstream: constants.Overlays, mounted over EPHEMERAL)
export const VAR_SYSTEM_OVERLAYS = "/var/system/overlays"; // VarSystemOverlaysPath
export const SYSTEM_OVERLAYS = "/system/overlays"; // SystemOverlaysPath (tmpfs: rebuilt every boot)
export const KUBELET_PLUGINS = "/usr/libexec/kubernetes"; // the kubelet's volume plugin folder
export const POD_RESOLV_CONF = "/system/resolved/resolv.conf"; // the resolv.conf the kubelet gives pods (KubeletConfiguration.resolvConf)
export const MACHINE_ID = "/etc/machine-id";
