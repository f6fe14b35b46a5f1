/**
 * Talos 1.14 Kubernetes documents. Every node gets cluster, node, kubelet, network, API-server-CA and KubePrism
 * documents; control planes also get the CAs with keys, API server policies, the etcd encryption config, the
 * service-account key, component images, Flannel and CoreDNS. CA material here is plain PEM, not base64.
 */
import {
  DEFAULT_KUBEPRISM_PORT, FLANNEL_BACKEND, FLANNEL_BACKEND_PORT, KUBELET_IMAGE, KUBE_APISERVER_IMAGE,
  KUBE_CONTROLLER_MANAGER_IMAGE, KUBE_PROXY_IMAGE, KUBE_SCHEDULER_IMAGE, LABEL_CONTROL_PLANE, LABEL_EXCLUDE_FROM_LB,
} from "./constants.js";
import { auditPolicy, authenticationConfiguration, authorizers, podSecurityConfiguration } from "./k8s-defaults.js";
import { doc, type Doc } from "./docs-common.js";
import { compact, image, type GenInput, type MachineType } from "./input.js";

export function kubernetesNodeDocuments(inp: GenInput, type: MachineType): Doc[] {
  if (!inp.contract.multidocKubernetes) return [];
  const cp = type === "controlplane";
  const s = inp.secrets;
  const labels = cp
    ? { [LABEL_CONTROL_PLANE]: "", ...(inp.contract.excludeFromExternalLB ? { [LABEL_EXCLUDE_FROM_LB]: "" } : {}) }
    : undefined;
  const taints = cp && !inp.allowSchedulingOnControlPlanes ? { [LABEL_CONTROL_PLANE]: "NoSchedule" } : undefined;
  return [
    doc("KubeClusterConfig", { clusterName: inp.clusterName, endpoint: inp.endpoint }),
    doc("KubeNodeConfig", compact([["nodeIP", {}], ["labels", labels], ["taints", taints]])),
    doc("KubeletConfig", {
      image: image(KUBELET_IMAGE, inp.kubernetesVersion),
      config: {},
      defaultRuntimeSeccompProfileEnabled: true,
    }),
    doc("KubeNetworkConfig", {
      dnsDomain: inp.dnsDomain,
      podSubnets: [...inp.podSubnets],
      serviceSubnets: [...inp.serviceSubnets],
    }),
    doc(
      "KubeAPIServerCAConfig",
      cp ? { issuingCA: { cert: s.certs.k8s.crt, key: s.certs.k8s.key } } : { acceptedCAs: [s.certs.k8s.crt] },
    ),
    doc("KubePrismConfig", { port: DEFAULT_KUBEPRISM_PORT }),
  ];
}

export function kubernetesControlPlaneDocuments(inp: GenInput): Doc[] {
  if (!inp.contract.multidocKubernetes) return [];
  const s = inp.secrets;
  const v = inp.kubernetesVersion;
  const apiSANs = [...(inp.contract.populateClusterSANsFromEndpoint ? [inp.endpointHost] : []), ...inp.additionalSans];
  return [
    doc("KubeAggregatorCAConfig", { issuingCA: { cert: s.certs.k8sAggregator.crt, key: s.certs.k8sAggregator.key } }),
    doc("KubeAdmissionControlConfig", { name: "PodSecurity", configuration: podSecurityConfiguration() }),
    doc("KubeAuditPolicyConfig", { configuration: auditPolicy() }),
    doc("KubeAuthenticationConfig", { configuration: authenticationConfiguration() }),
    ...authorizers().map((a) => doc("KubeAuthorizerConfig", a)),
    doc("KubeEtcdEncryptionConfig", { config: { resources: [{ providers: encryptionProviders(inp), resources: ["secrets"] }] } }),
    doc("KubeServiceAccountConfig", { issuer: { privateKey: s.certs.k8sServiceAccount.key, issuerURL: inp.endpoint } }),
    doc("KubeAPIServerConfig", compact([["image", image(KUBE_APISERVER_IMAGE, v)], ["certExtraSANs", apiSANs.length ? apiSANs : undefined]])),
    doc("KubeControllerManagerConfig", { image: image(KUBE_CONTROLLER_MANAGER_IMAGE, v) }),
    doc("KubeSchedulerConfig", { image: image(KUBE_SCHEDULER_IMAGE, v), config: {} }),
    doc("KubeProxyConfig", { image: image(KUBE_PROXY_IMAGE, v), config: {} }),
    doc("KubeFlannelCNIConfig", { backendType: FLANNEL_BACKEND, backendPort: FLANNEL_BACKEND_PORT }),
    doc("KubeCoreDNSConfig", { enabled: true }),
  ];
}

/**
 * Provider names and order must match what pre-1.14 Talos rendered for kube-apiserver ("key2" secretbox, then "key1"
 * for an AES-CBC-era secret), otherwise a regenerated config could no longer decrypt existing secrets.
 */
function encryptionProviders(inp: GenInput): unknown[] {
  const out: unknown[] = [];
  const { secretboxEncryptionSecret: box, aescbcEncryptionSecret: aes } = inp.secrets.secrets;
  if (box) out.push({ secretbox: { keys: [{ name: "key2", secret: box }] } });
  if (aes) out.push({ secretbox: { keys: [{ name: "key1", secret: aes }] } });
  return out;
}
