/**
 * Where Talos' strategic merge departs from "maps merge, lists append". Upstream expresses these as custom Merge
 * methods and `merge:"replace"` struct tags on the Go types; here they are a table keyed by document kind and a
 * path pattern (`[]` stands for "any list item").
 *
 *  - keyed: list items with the same key merge into the existing item; others are appended
 *    (network interfaces by `interface` or `deviceSelector`, VLANs by `vlanId`, admission plugins by `name`,
 *    extension config files by `mountPath`); `replaceItem` replaces the matched item instead of merging it
 *    (image verification rules by `image`);
 *  - replace: the patch value replaces the old one (pod/service subnets, audit policy, firewall ingress ...);
 *  - args: a map of component flags whose values are replaced per key, never merged (meta.Args: extraArgs).
 */
import { deepEqual, isPlainObject } from "../tree.js";

export type Rule =
  | { kind: "keyed"; match: (a: unknown, b: unknown) => boolean; replaceItem?: boolean }
  | { kind: "replace" }
  | { kind: "args" };

/** Same non-empty value of `field` in both items. */
const byField = (field: string) => (a: unknown, b: unknown) =>
  isPlainObject(a) && isPlainObject(b) && b[field] !== undefined && b[field] !== null && b[field] !== "" &&
  String(a[field]) === String(b[field]);

/** Upstream NetworkDeviceList: by interface name when the patch item has one, else by equal deviceSelector. */
const sameDevice = (a: unknown, b: unknown) => {
  if (!isPlainObject(a) || !isPlainObject(b)) return false;
  if (typeof b.interface === "string" && b.interface !== "") return a.interface === b.interface;
  return isPlainObject(b.deviceSelector) && deepEqual(a.deviceSelector, b.deviceSelector);
};

/** Upstream VlanList: by vlanId (an item without one has ID 0). */
const sameVlan = (a: unknown, b: unknown) =>
  isPlainObject(a) && isPlainObject(b) && Number(a.vlanId ?? 0) === Number(b.vlanId ?? 0);

const replace: Rule = { kind: "replace" };
const args: Rule = { kind: "args" };

const v1alpha1Rules: Record<string, Rule> = {
  "machine.network.interfaces": { kind: "keyed", match: sameDevice },
  "machine.network.interfaces[].vlans": { kind: "keyed", match: sameVlan },
  "cluster.apiServer.admissionControl": { kind: "keyed", match: byField("name") },
  "cluster.network.podSubnets": replace,
  "cluster.network.serviceSubnets": replace,
  "cluster.apiServer.auditPolicy": replace,
  "machine.kubelet.extraArgs": args,
  "cluster.apiServer.extraArgs": args,
  "cluster.controllerManager.extraArgs": args,
  "cluster.scheduler.extraArgs": args,
  "cluster.proxy.extraArgs": args,
  "cluster.etcd.extraArgs": args,
};

const kindRules: Record<string, Record<string, Rule>> = {
  v1alpha1: v1alpha1Rules,
  ExtensionServiceConfig: { configFiles: { kind: "keyed", match: byField("mountPath") } },
  ImageVerificationConfig: { rules: { kind: "keyed", match: byField("image"), replaceItem: true } },
  NetworkRuleConfig: { ingress: replace, "portSelector.ports": replace },
  KubeNetworkConfig: { podSubnets: replace, serviceSubnets: replace },
  BGPInstanceConfig: { advertise: replace, importRoutes: replace, neighbors: replace },
  KubeStaticPodConfig: { pod: replace },
  KubeAuditPolicyConfig: { configuration: replace },
  KubeAuthenticationConfig: { configuration: replace },
  KubeCredentialProviderConfig: { configuration: replace },
  CRIBaseRuntimeSpecConfig: { overrides: replace },
  KubeletConfig: { extraArgs: args },
  KubeAPIServerConfig: { extraArgs: args },
  KubeControllerManagerConfig: { extraArgs: args },
  KubeSchedulerConfig: { extraArgs: args },
  KubeProxyConfig: { extraArgs: args },
};

export function ruleFor(kind: string, pattern: string): Rule | undefined {
  return kindRules[kind]?.[pattern];
}
