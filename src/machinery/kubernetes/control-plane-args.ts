/**
 * Command lines of the control plane components, as upstream's ControlPlaneStaticPodController builds them from
 * the component configs: fixed flags pointing at the files rendered under /system/secrets/kubernetes and
 * /system/config/kubernetes, version-dependent flags (authorization config, cloud provider), and the user's
 * extraArgs merged under upstream's allow/deny rules. Flags render sorted, one `--key=value` per value.
 */
import type { MachineConfig } from "../config/index.js";
import { APISERVER_CONFIG, APISERVER_SECRETS, AUDIT_LOG_DIR, CONTROLLER_MANAGER_SECRETS, SCHEDULER_CONFIG, SCHEDULER_SECRETS } from "../paths.js";
import type { APIServerConfigSpec, ArgValues, ControllerManagerConfigSpec, SchedulerConfigSpec } from "../resources/types/k8s-controlplane.js";
import { args, mergeArgs, renderArgs, type Args, type MergePolicy } from "./args.js";
import {
  cloudProviderFlagRemoved,
  structuredAuthorizationByDefault,
  supportsAuthorizationConfigFile,
  versionFromImageRef,
  type KubeVersion,
} from "./version.js";

export const DEFAULT_API_PORT = 6443;

/** Ciphers the API server offers for TLS 1.2 (it faces clients outside the node, so 1.2 stays allowed). */
export const APISERVER_CIPHER_SUITES = [
  "TLS_AES_128_GCM_SHA256",
  "TLS_AES_256_GCM_SHA384",
  "TLS_CHACHA20_POLY1305_SHA256",
  "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
  "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
  "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
  "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
  "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
  "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
  "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
  "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
].join(",");

const denied = (...keys: string[]): Record<string, MergePolicy> => Object.fromEntries(keys.map((k) => [k, "denied"]));

/** cluster.controlPlane.localAPIServerPort, default 6443. */
export function apiServerPort(cfg: MachineConfig): number {
  return cfg.cluster?.controlPlane?.localAPIServerPort || DEFAULT_API_PORT;
}

function extra(values: Record<string, ArgValues>): Args {
  return new Map(Object.entries(values).map(([k, v]) => [k, [...v.values]]));
}

export function apiServerArgs(spec: APIServerConfigSpec): string[] {
  const s = (f: string) => `${APISERVER_SECRETS}/${f}`;
  const a = args({
    "admission-control-config-file": `${APISERVER_CONFIG}/admission-control-config.yaml`,
    "allow-privileged": "true",
    // Without it, unauthenticated requests get system:unauthenticated and can read /version and the like.
    "anonymous-auth": "false",
    "api-audiences": spec.controlPlaneEndpoint,
    "bind-address": "0.0.0.0",
    "client-ca-file": s("ca.crt"),
    "enable-admission-plugins": "NodeRestriction",
    "requestheader-client-ca-file": s("aggregator-ca.crt"),
    "requestheader-allowed-names": "front-proxy-client",
    "requestheader-extra-headers-prefix": "X-Remote-Extra-",
    "requestheader-group-headers": "X-Remote-Group",
    "requestheader-username-headers": "X-Remote-User",
    "proxy-client-cert-file": s("front-proxy-client.crt"),
    "proxy-client-key-file": s("front-proxy-client.key"),
    "enable-bootstrap-token-auth": "true",
    "tls-min-version": "VersionTLS12",
    "tls-cipher-suites": APISERVER_CIPHER_SUITES,
    "encryption-provider-config": s("encryptionconfig.yaml"),
    "audit-policy-file": `${APISERVER_CONFIG}/auditpolicy.yaml`,
    "audit-log-path": `${AUDIT_LOG_DIR}/kube-apiserver.log`,
    "audit-log-maxage": "30",
    "audit-log-maxbackup": "10",
    "audit-log-maxsize": "100",
    profiling: "false",
    "etcd-cafile": s("etcd-client-ca.crt"),
    "etcd-certfile": s("etcd-client.crt"),
    "etcd-keyfile": s("etcd-client.key"),
    "etcd-servers": spec.etcdServers.join(","),
    "kubelet-client-certificate": s("apiserver-kubelet-client.crt"),
    "kubelet-client-key": s("apiserver-kubelet-client.key"),
    "secure-port": String(spec.localPort),
    "service-account-issuer": spec.controlPlaneEndpoint,
    "service-account-key-file": s("service-account.pub"),
    "service-account-signing-key-file": s("service-account.key"),
    "service-cluster-ip-range": spec.serviceCIDR.join(","),
    "tls-cert-file": s("apiserver.crt"),
    "tls-private-key-file": s("apiserver.key"),
    "kubelet-preferred-address-types": "InternalIP,ExternalIP,Hostname",
  });
  if (spec.advertisedAddress) a.set("advertise-address", [spec.advertisedAddress]);
  const version = versionFromImageRef(spec.image);
  if (spec.cloudProvider && !cloudProviderFlagRemoved(version)) a.set("cloud-provider", [spec.cloudProvider]);
  const user = extra(spec.extraArgs);
  authorizationFlags(version, a, user);
  mergeArgs(a, user, {
    "enable-admission-plugins": "additive",
    "feature-gates": "additive",
    "authorization-mode": "additive",
    "tls-cipher-suites": "additive",
    ...denied(
      "etcd-servers",
      "client-ca-file",
      "requestheader-client-ca-file",
      "proxy-client-cert-file",
      "proxy-client-key-file",
      "encryption-provider-config",
      "etcd-cafile",
      "etcd-certfile",
      "etcd-keyfile",
      "kubelet-client-certificate",
      "kubelet-client-key",
      "service-account-key-file",
      "service-account-signing-key-file",
      "tls-cert-file",
      "tls-private-key-file",
      "authorization-config",
    ),
  });
  return ["/usr/local/bin/kube-apiserver", ...renderArgs(a)];
}

/**
 * Classic `--authorization-mode=Node,RBAC` when the user sets authorization-mode or authorization-webhook-* flags
 * or the API server predates config files; otherwise the rendered authorization config file (with the feature gate
 * the 1.29 API server still needs).
 */
function authorizationFlags(version: KubeVersion, a: Args, user: Args): void {
  const userAuthz = user.has("authorization-mode") || [...user.keys()].some((k) => k.startsWith("authorization-webhook-"));
  if (userAuthz || !supportsAuthorizationConfigFile(version)) {
    a.set("authorization-mode", ["Node,RBAC"]);
    return;
  }
  if (!structuredAuthorizationByDefault(version)) a.set("feature-gates", ["StructuredAuthorizationConfiguration=true"]);
  a.set("authorization-config", [`${APISERVER_CONFIG}/authorization-config.yaml`]);
}

export function controllerManagerArgs(spec: ControllerManagerConfigSpec): string[] {
  const s = (f: string) => `${CONTROLLER_MANAGER_SECRETS}/${f}`;
  const a = args({
    "allocate-node-cidrs": "true",
    "bind-address": "127.0.0.1",
    "cluster-cidr": spec.podCIDRs.join(","),
    "service-cluster-ip-range": spec.serviceCIDRs.join(","),
    "cluster-signing-cert-file": s("ca.crt"),
    "cluster-signing-key-file": s("ca.key"),
    // tokencleaner removes expired bootstrap tokens; it is off by default.
    controllers: "*,tokencleaner",
    "configure-cloud-routes": "false",
    kubeconfig: s("kubeconfig"),
    "authentication-kubeconfig": s("kubeconfig"),
    "authorization-kubeconfig": s("kubeconfig"),
    "leader-elect": "true",
    "root-ca-file": s("ca.crt"),
    "service-account-private-key-file": s("service-account.key"),
    profiling: "false",
    "tls-min-version": "VersionTLS13",
  });
  if (spec.cloudProvider && !cloudProviderFlagRemoved(versionFromImageRef(spec.image))) a.set("cloud-provider", [spec.cloudProvider]);
  mergeArgs(a, extra(spec.extraArgs), {
    "service-cluster-ip-range": "additive",
    controllers: "additive",
    ...denied(
      "cluster-signing-cert-file",
      "cluster-signing-key-file",
      "authentication-kubeconfig",
      "authorization-kubeconfig",
      "root-ca-file",
      "service-account-private-key-file",
    ),
  });
  return ["/usr/local/bin/kube-controller-manager", "--use-service-account-credentials", ...renderArgs(a)];
}

export function schedulerArgs(spec: SchedulerConfigSpec): string[] {
  const a = args({
    config: `${SCHEDULER_CONFIG}/scheduler-config.yaml`,
    "authentication-tolerate-lookup-failure": "false",
    "authentication-kubeconfig": `${SCHEDULER_SECRETS}/kubeconfig`,
    "authorization-kubeconfig": `${SCHEDULER_SECRETS}/kubeconfig`,
    "bind-address": "127.0.0.1",
    "leader-elect": "true",
    profiling: "false",
    "tls-min-version": "VersionTLS13",
  });
  mergeArgs(a, extra(spec.extraArgs), denied("kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig", "config"));
  return ["/usr/local/bin/kube-scheduler", ...renderArgs(a)];
}
