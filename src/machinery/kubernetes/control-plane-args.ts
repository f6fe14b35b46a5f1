/**
 * Command lines of the control plane components, built as Talos builds them (fixed flags pointing at
 * the certificates Talos writes under /system/secrets/kubernetes, user extraArgs merged under the
 * same allow/deny rules) from the cluster section of the machine config.
 */
import type { MachineConfig } from "../config/index.js";
import { args, extraArgs, mergeArgs, renderArgs, type MergePolicy } from "./args.js";
import { podCIDRs, serviceCIDRs } from "./network.js";

export { APISERVER_CONFIG, APISERVER_SECRETS, AUDIT_LOG_DIR, CONTROLLER_MANAGER_SECRETS, SCHEDULER_CONFIG, SCHEDULER_SECRETS } from "../paths.js";
import { APISERVER_CONFIG, APISERVER_SECRETS, AUDIT_LOG_DIR, CONTROLLER_MANAGER_SECRETS, SCHEDULER_CONFIG, SCHEDULER_SECRETS } from "../paths.js";
export const DEFAULT_API_PORT = 6443;

const denied = (...keys: string[]): Record<string, MergePolicy> => Object.fromEntries(keys.map((k) => [k, "denied"]));

export function apiServerPort(cfg: MachineConfig): number {
  return cfg.cluster?.controlPlane?.localAPIServerPort || DEFAULT_API_PORT;
}

export function apiServerArgs(cfg: MachineConfig): string[] {
  const s = (f: string) => `${APISERVER_SECRETS}/${f}`;
  const issuer = cfg.endpoint() ?? "";
  const a = args({
    "admission-control-config-file": `${APISERVER_CONFIG}/admission-control-config.yaml`,
    "allow-privileged": "true",
    "api-audiences": issuer,
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
    "tls-min-version": "VersionTLS13",
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
    // kube-apiserver talks to the etcd of its own node.
    "etcd-servers": "https://127.0.0.1:2379",
    "kubelet-client-certificate": s("apiserver-kubelet-client.crt"),
    "kubelet-client-key": s("apiserver-kubelet-client.key"),
    "secure-port": String(apiServerPort(cfg)),
    "service-account-issuer": issuer,
    "service-account-key-file": s("service-account.pub"),
    "service-account-signing-key-file": s("service-account.key"),
    "service-cluster-ip-range": serviceCIDRs(cfg).join(","),
    "tls-cert-file": s("apiserver.crt"),
    "tls-private-key-file": s("apiserver.key"),
    "kubelet-preferred-address-types": "InternalIP,ExternalIP,Hostname",
    "anonymous-auth": "false",
  });
  if (!cfg.machine?.kubelet?.skipNodeRegistration) a.set("advertise-address", ["$(POD_IP)"]);
  if (cfg.cluster?.externalCloudProvider?.enabled) a.set("cloud-provider", ["external"]);
  const extra = extraArgs(cfg.cluster?.apiServer?.extraArgs);
  // Explicit authorization flags switch back from the authorization config file to classic modes.
  if (extra.has("authorization-mode") || [...extra.keys()].some((k) => k.startsWith("authorization-webhook-"))) {
    a.set("authorization-mode", ["Node,RBAC"]);
  } else {
    a.set("authorization-config", [`${APISERVER_CONFIG}/authorization-config.yaml`]);
  }
  mergeArgs(a, extra, {
    "enable-admission-plugins": "additive",
    "feature-gates": "additive",
    "authorization-mode": "additive",
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
      "tls-min-version",
      "tls-private-key-file",
      "authorization-config",
    ),
  });
  return ["/usr/local/bin/kube-apiserver", ...renderArgs(a)];
}

export function controllerManagerArgs(cfg: MachineConfig): string[] {
  const s = (f: string) => `${CONTROLLER_MANAGER_SECRETS}/${f}`;
  const pods = podCIDRs(cfg);
  const a = args({
    "allocate-node-cidrs": "true",
    "bind-address": "127.0.0.1",
    "cluster-cidr": pods.join(","),
    "service-cluster-ip-range": serviceCIDRs(cfg).join(","),
    "cluster-signing-cert-file": s("ca.crt"),
    "cluster-signing-key-file": s("ca.key"),
    controllers: "*",
    "configure-cloud-routes": "false",
    kubeconfig: s("kubeconfig"),
    "authentication-kubeconfig": s("kubeconfig"),
    "authorization-kubeconfig": s("kubeconfig"),
    "leader-elect": "true",
    "root-ca-file": s("ca.crt"),
    "service-account-private-key-file": s("service-account.key"),
    profiling: "false",
    "terminated-pod-gc-threshold": "100",
    "tls-min-version": "VersionTLS13",
    "use-service-account-credentials": "true",
  });
  if (cfg.cluster?.externalCloudProvider?.enabled) a.set("cloud-provider", ["external"]);
  if (pods.some((p) => !p.includes(":"))) a.set("node-cidr-mask-size-ipv4", ["24"]);
  if (pods.some((p) => p.includes(":"))) a.set("node-cidr-mask-size-ipv6", ["112"]);
  mergeArgs(a, extraArgs(cfg.cluster?.controllerManager?.extraArgs), {
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

export function schedulerArgs(cfg: MachineConfig): string[] {
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
  mergeArgs(a, extraArgs(cfg.cluster?.scheduler?.extraArgs), denied("kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig", "config"));
  return ["/usr/local/bin/kube-scheduler", ...renderArgs(a)];
}
