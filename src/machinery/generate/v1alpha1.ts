/**
 * The v1alpha1 document (`version: v1alpha1`, machine + cluster). Which sections it carries depends on the contract:
 * up to Talos 1.13 it holds kubelet, install, Kubernetes component settings and CAs; from 1.14 those moved to their
 * own documents and v1alpha1 keeps the machine identity (type, token, OS CA, certSANs), the bootstrap token and the
 * etcd CA.
 */
import { toBase64Pem } from "../pki/pem.js";
import type { CertAndKey } from "../pki/ca.js";
import {
  DEFAULT_KUBEPRISM_PORT, KUBELET_IMAGE, KUBE_APISERVER_IMAGE, KUBE_CONTROLLER_MANAGER_IMAGE, KUBE_PROXY_IMAGE,
  KUBE_SCHEDULER_IMAGE, LABEL_EXCLUDE_FROM_LB,
} from "./constants.js";
import { auditPolicy, podSecurityConfiguration } from "./k8s-defaults.js";
import { compact, image, type GenInput, type MachineType } from "./input.js";

const b64Pair = (p: CertAndKey) => ({ crt: toBase64Pem(p.crt), key: toBase64Pem(p.key) });
/** Workers carry CA certificates without keys; the key is written as an empty string. */
const crtOnly = (p: CertAndKey) => ({ crt: toBase64Pem(p.crt), key: "" });

export function v1alpha1Document(inp: GenInput, type: MachineType): Record<string, unknown> {
  return {
    version: "v1alpha1",
    debug: inp.debug,
    persist: true,
    machine: machineSection(inp, type),
    cluster: clusterSection(inp, type),
  };
}

function machineSection(inp: GenInput, type: MachineType): Record<string, unknown> {
  const c = inp.contract;
  const cp = type === "controlplane";
  const legacyK8s = !c.multidocKubernetes;
  const kubelet = legacyK8s
    ? compact([
        ["image", image(KUBELET_IMAGE, inp.kubernetesVersion)],
        ["defaultRuntimeSeccompProfileEnabled", c.kubeletSeccompDefault ? true : undefined],
        ["disableManifestsDirectory", c.kubeletManifestsDirectoryDisabled ? true : undefined],
      ])
    : undefined;
  const install = !c.unattendedInstall
    ? compact([
        ["disk", inp.installDisk || undefined],
        ["image", inp.installImage || undefined],
        ["wipe", false],
        ["grubUseUKICmdline", c.grubUseUKICmdline ? true : undefined],
      ])
    : undefined;
  const network = c.kubeSpanMultidoc
    ? undefined
    : compact([["kubespan", inp.kubeSpan === undefined ? undefined : { enabled: inp.kubeSpan }]]);
  const labels =
    cp && legacyK8s && c.excludeFromExternalLB ? { [LABEL_EXCLUDE_FROM_LB]: "" } : undefined;
  return compact([
    ["type", type],
    ["token", inp.secrets.trustdInfo.token],
    ["ca", cp ? b64Pair(inp.secrets.certs.os) : crtOnly(inp.secrets.certs.os)],
    ["certSANs", [...inp.additionalSans]],
    ["kubelet", kubelet],
    ["network", network],
    ["install", install],
    ["registries", c.alternateImageRegistries ? { mirrors: { "k8s.gcr.io": { endpoints: ["https://registry.k8s.io", "https://k8s.gcr.io"] } } } : undefined],
    ["features", features(inp)],
    ["nodeLabels", labels],
  ]);
}

function features(inp: GenInput): Record<string, unknown> {
  const c = inp.contract;
  const rbac = !c.hideRBACAndKeyUsage;
  return compact([
    ["rbac", rbac ? true : undefined],
    ["stableHostname", c.stableHostname && !c.multidocNetwork ? true : undefined],
    ["apidCheckExtKeyUsage", rbac && c.apidExtKeyUsageCheck ? true : undefined],
    ["diskQuotaSupport", c.diskQuotaSupport ? true : undefined],
    ["kubePrism", !c.multidocKubernetes && c.kubePrism ? { enabled: true, port: DEFAULT_KUBEPRISM_PORT } : undefined],
    [
      "hostDNS",
      c.hostDNS && !c.hostDNSMultidoc
        ? compact([["enabled", true], ["forwardKubeDNSToHost", c.hostDNSForwardKubeDNSToHost ? true : undefined]])
        : undefined,
    ],
  ]);
}

function clusterSection(inp: GenInput, type: MachineType): Record<string, unknown> {
  const c = inp.contract;
  const s = inp.secrets;
  const cp = type === "controlplane";
  const legacyK8s = !c.multidocKubernetes;
  const legacyIdentity = !c.discoveryIdentityMultidoc;
  const apiSANs = [...(c.populateClusterSANsFromEndpoint ? [inp.endpointHost] : []), ...inp.additionalSans];
  const legacyCP = legacyK8s && cp;
  // the etcd encryption secret lives here only until 1.13; secretbox since 1.3, AES-CBC before
  const secretbox = legacyCP && c.secretboxEncryption ? s.secrets.secretboxEncryptionSecret : undefined;
  const aescbc = legacyCP && !c.secretboxEncryption ? s.secrets.aescbcEncryptionSecret : undefined;
  return compact([
    ["id", legacyIdentity ? s.cluster.id : undefined],
    ["secret", legacyIdentity ? s.cluster.secret : undefined],
    ["controlPlane", legacyK8s ? { endpoint: inp.endpoint } : undefined],
    ["clusterName", legacyK8s && (cp || c.clusterNameForWorkers) ? inp.clusterName : undefined],
    [
      "network",
      legacyK8s
        ? { dnsDomain: inp.dnsDomain, podSubnets: [...inp.podSubnets], serviceSubnets: [...inp.serviceSubnets] }
        : undefined,
    ],
    ["token", s.secrets.bootstrapToken],
    ["aescbcEncryptionSecret", aescbc || undefined],
    ["secretboxEncryptionSecret", secretbox || undefined],
    ["ca", legacyK8s ? (cp ? b64Pair(s.certs.k8s) : crtOnly(s.certs.k8s)) : undefined],
    ["aggregatorCA", legacyCP ? b64Pair(s.certs.k8sAggregator) : undefined],
    ["serviceAccount", legacyCP ? { key: toBase64Pem(s.certs.k8sServiceAccount.key) } : undefined],
    ["apiServer", legacyCP ? apiServer(inp, apiSANs) : undefined],
    ["controllerManager", legacyCP ? { image: image(KUBE_CONTROLLER_MANAGER_IMAGE, inp.kubernetesVersion) } : undefined],
    ["proxy", legacyCP ? { image: image(KUBE_PROXY_IMAGE, inp.kubernetesVersion) } : undefined],
    ["scheduler", legacyCP ? { image: image(KUBE_SCHEDULER_IMAGE, inp.kubernetesVersion) } : undefined],
    ["discovery", c.discoveryServiceMultidoc ? undefined : discovery(inp)],
    ["etcd", cp ? { ca: b64Pair(s.certs.etcd) } : undefined],
    [
      c.allowSchedulingOnControlPlanesField ? "allowSchedulingOnControlPlanes" : "allowSchedulingOnMasters",
      legacyCP && inp.allowSchedulingOnControlPlanes ? true : undefined,
    ],
  ]);
}

function apiServer(inp: GenInput, certSANs: string[]): Record<string, unknown> {
  const c = inp.contract;
  return compact([
    ["image", image(KUBE_APISERVER_IMAGE, inp.kubernetesVersion)],
    ["certSANs", certSANs.length ? certSANs : undefined],
    ["disablePodSecurityPolicy", c.hideDisablePSP ? undefined : true],
    [
      "admissionControl",
      c.podSecurityAdmission ? [{ name: "PodSecurity", configuration: podSecurityConfiguration() }] : undefined,
    ],
    ["auditPolicy", c.auditPolicy ? auditPolicy() : undefined],
  ]);
}

function discovery(inp: GenInput): Record<string, unknown> {
  return {
    enabled: inp.discovery,
    registries: {
      kubernetes: inp.contract.kubernetesDiscoveryBackendDisabled ? { disabled: true } : {},
      service: {},
    },
  };
}
