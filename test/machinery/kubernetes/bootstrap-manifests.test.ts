/**
 * Bootstrap manifest templates: every object against its golden file (our fixtures, rendered from the same inputs
 * upstream's k8stemplates tests use), and the fixtures against upstream's own testdata when a Talos v1.13.9 source
 * tree is present (TALOS_SRC, default /work/tools/src/talos-1.13.9). Upstream's goldens are its typed objects
 * serialized, status included; its Manifest resources drop `status`, so the comparison does too. Formatting is
 * normalised by comparing parsed YAML.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import * as t from "../../../src/machinery/kubernetes/bootstrap-manifests.js";
import type { BootstrapManifestsConfigSpec, KubeObjectData } from "../../../src/machinery/resources/types/k8s-manifests.js";
import { sortKeysDeep } from "../../../src/machinery/resources/types/k8s.js";

const FIXTURES = new URL("./fixtures/bootstrap-manifests/", import.meta.url).pathname;
const UPSTREAM = join(process.env.TALOS_SRC ?? "/work/tools/src/talos-1.13.9", "internal/app/machined/pkg/controllers/k8s/internal/k8stemplates/testdata");
const RECORD = process.env.RECORD_FIXTURES === "1";

const spec = (s: Partial<BootstrapManifestsConfigSpec>): BootstrapManifestsConfigSpec => ({
  server: "",
  clusterDomain: "",
  podCIDRs: [],
  proxyEnabled: false,
  proxyImage: "",
  proxyArgs: [],
  coreDNSEnabled: false,
  coreDNSImage: "",
  dnsServiceIP: "",
  dnsServiceIPv6: "",
  flannelEnabled: false,
  flannelImage: "",
  flannelExtraArgs: [],
  flannelKubeServiceHost: "",
  flannelKubeServicePort: "",
  flannelKubeNetworkPoliciesEnabled: false,
  flannelKubeNetworkPoliciesImage: "",
  podSecurityPolicyEnabled: false,
  talosAPIServiceEnabled: false,
  cniName: "",
  ...s,
});

/** Upstream's test table (k8stemplates_test.go): golden name → the object built from the same input. */
const CASES: [string, () => KubeObjectData][] = [
  ["coredns-service-ipv4", () => t.coreDNSService(spec({ dnsServiceIP: "10.96.0.10" }))],
  ["coredns-service-ipv6", () => t.coreDNSService(spec({ dnsServiceIPv6: "fd00::10" }))],
  ["coredns-service-dual", () => t.coreDNSService(spec({ dnsServiceIP: "10.96.0.10", dnsServiceIPv6: "fd00::10" }))],
  ["coredns-service-account", t.coreDNSServiceAccount],
  ["coredns-cluster-role-binding", t.coreDNSClusterRoleBinding],
  ["coredns-cluster-role", t.coreDNSClusterRole],
  ["coredns-configmap-cluster-domain", () => t.coreDNSConfigMap(spec({ clusterDomain: "cluster.local" }))],
  ["coredns-configmap-no-cluster-domain", () => t.coreDNSConfigMap(spec({}))],
  ["coredns-deployment", () => t.coreDNSDeployment(spec({ coreDNSImage: "coredns/coredns:1.9.3" }))],
  ["kubelet-bootstrapping-token", () => t.kubeletBootstrapTokenSecret({ bootstrapTokenID: "25p8ak", bootstrapTokenSecret: "vshybadgp2mhtvm7" })],
  ["csr-node-bootstrap", t.csrNodeBootstrap],
  ["csr-approver-role-binding", t.csrApproverRoleBinding],
  ["csr-renewal-role-binding", t.csrRenewalRoleBinding],
  ["kubeconfig-in-cluster", () => t.kubeconfigInCluster(spec({ server: "https://localhost:6443" }))],
  ["talos-nodes-rbac-cluster-role-binding", t.talosNodesClusterRoleBinding],
  ["talos-nodes-rbac-cluster-role", t.talosNodesClusterRole],
  ["kube-proxy-daemonset", () => t.kubeProxyDaemonSet(spec({ proxyImage: "k8s.gcr.io/kube-proxy:v1.27.0", proxyArgs: ["--proxy-mode=iptables"] }))],
  ["kube-proxy-service-account", t.kubeProxyServiceAccount],
  ["kube-proxy-cluster-role-binding", t.kubeProxyClusterRoleBinding],
  ["talos-service-account-crd", t.talosServiceAccountCRD],
  ["flannel-cluster-role", () => t.flannelClusterRole(spec({}))],
  ["flannel-cluster-role-with-network-policies", () => t.flannelClusterRole(spec({ flannelKubeNetworkPoliciesEnabled: true }))],
  ["flannel-cluster-role-binding", t.flannelClusterRoleBinding],
  ["flannel-service-account", t.flannelServiceAccount],
  ["flannel-configmap-v4", () => t.flannelConfigMap(spec({ podCIDRs: ["10.96.0.0/12"] }))],
  ["flannel-configmap-v6", () => t.flannelConfigMap(spec({ podCIDRs: ["fd00::/112"] }))],
  ["flannel-configmap-dual", () => t.flannelConfigMap(spec({ podCIDRs: ["10.96.0.0/12", "fd00::/112"] }))],
  ["flannel-daemonset", () => t.flannelDaemonSet(spec({ flannelImage: "quay.io/coreos/flannel:v0.14.0", flannelExtraArgs: ["--foo=bar"] }))],
  [
    "flannel-daemonset-with-network-policies",
    () =>
      t.flannelDaemonSet(
        spec({
          flannelImage: "quay.io/coreos/flannel:v0.14.0",
          flannelExtraArgs: ["--foo=bar"],
          flannelKubeNetworkPoliciesEnabled: true,
          flannelKubeNetworkPoliciesImage: "registry.k8s.io/networking/kube-network-policies:v0.7.0",
        }),
      ),
  ],
];

/** A golden file as upstream's Manifest resource holds it: without `status`. */
function golden(path: string): unknown {
  const obj = parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  delete obj.status;
  return obj;
}

describe("bootstrap manifest templates", () => {
  it.each(CASES)("%s matches its golden file", (name, render) => {
    const obj = render();
    const path = join(FIXTURES, `${name}.yaml`);
    if (RECORD) writeFileSync(path, stringify(sortKeysDeep(obj), { lineWidth: 0 }));
    expect(obj).toStrictEqual(golden(path));
    // Nothing in the object YAML could not carry (undefined, functions): it survives a YAML round trip unchanged.
    expect(parse(stringify(obj))).toStrictEqual(obj);
  });

  it.skipIf(!existsSync(UPSTREAM))("our golden files equal upstream's testdata (minus status), but for flannel's CNI version", () => {
    // The one deliberate difference (bootstrap-manifests.ts FLANNEL_CNI_VERSION): the CNI version in the flannel chain.
    const asUpstream = (o: unknown) => JSON.parse(JSON.stringify(o).replaceAll(`\\"cniVersion\\": \\"${t.FLANNEL_CNI_VERSION}\\"`, `\\"cniVersion\\": \\"1.0.0\\"`));
    for (const [name] of CASES) expect(asUpstream(golden(join(FIXTURES, `${name}.yaml`))), name).toStrictEqual(golden(join(UPSTREAM, `${name}.yaml`)));
  });

  it("quotes a server URL YAML would not read back as written", () => {
    const text = (t.kubeconfigInCluster({ server: "https://[fd00::1]:6443" }).data as { kubeconfig: string }).kubeconfig;
    expect((parse(text) as { clusters: { cluster: { server: string } }[] }).clusters[0].cluster.server).toBe("https://[fd00::1]:6443");
    const odd = (t.kubeconfigInCluster({ server: "https://h:1/#x: y" }).data as { kubeconfig: string }).kubeconfig;
    expect((parse(odd) as { clusters: { cluster: { server: string } }[] }).clusters[0].cluster.server).toBe("https://h:1/#x: y");
  });
});

describe("renderBootstrapManifests", () => {
  const full = spec({
    server: "https://127.0.0.1:7445",
    clusterDomain: "cluster.local",
    podCIDRs: ["10.244.0.0/16"],
    proxyEnabled: true,
    proxyImage: "registry.k8s.io/kube-proxy:v1.37.2",
    proxyArgs: ["--proxy-mode=nftables"],
    coreDNSEnabled: true,
    coreDNSImage: "registry.k8s.io/coredns/coredns:v1.14.6",
    dnsServiceIP: "10.96.0.10",
    flannelEnabled: true,
    flannelImage: "ghcr.io/siderolabs/flannel:v0.28.9",
    flannelKubeServiceHost: "127.0.0.1",
    flannelKubeServicePort: "7445",
    cniName: "flannel",
  });
  const secrets = { bootstrapTokenID: "abcdef", bootstrapTokenSecret: "0123456789abcdef" };

  it("renders upstream's manifest ids with their objects in order", () => {
    const out = t.renderBootstrapManifests(full, secrets);
    expect(out.map((m) => m.id)).toEqual([
      "00-kubelet-bootstrapping-token",
      "01-csr-node-bootstrap",
      "01-csr-approver-role-binding",
      "01-csr-renewal-role-binding",
      "11-kube-config-in-cluster",
      "11-talos-node-rbac-template",
      "11-core-dns",
      "11-core-dns-svc",
      "05-flannel",
      "10-kube-proxy",
    ]);
    const kinds = Object.fromEntries(out.map((m) => [m.id, m.objects.map((o) => `${o.kind}/${(o.metadata as { name: string }).name}`)]));
    expect(kinds["05-flannel"]).toEqual(["ClusterRole/flannel", "ClusterRoleBinding/flannel", "ServiceAccount/flannel", "ConfigMap/kube-flannel-cfg", "DaemonSet/kube-flannel"]);
    expect(kinds["10-kube-proxy"]).toEqual(["DaemonSet/kube-proxy", "ServiceAccount/kube-proxy", "ClusterRoleBinding/kube-proxy"]);
    expect(kinds["11-core-dns"]).toEqual([
      "ServiceAccount/coredns",
      "ClusterRole/system:coredns",
      "ClusterRoleBinding/system:coredns",
      "ConfigMap/coredns",
      "Deployment/coredns",
    ]);
    expect(kinds["11-talos-node-rbac-template"]).toEqual(["ClusterRoleBinding/system:talos-nodes", "ClusterRole/system:talos-nodes"]);
    expect(kinds["00-kubelet-bootstrapping-token"]).toEqual(["Secret/bootstrap-token-abcdef"]);
  });

  it("points flannel at KubePrism and kube-proxy's kubeconfig at the configured server", () => {
    const out = t.renderBootstrapManifests(full, secrets);
    const ds = out.find((m) => m.id === "05-flannel")!.objects[4] as { spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } } };
    const env = ds.spec.template.spec.containers[0].env;
    expect(env.filter((e) => e.name.startsWith("KUBERNETES_SERVICE"))).toEqual([
      { name: "KUBERNETES_SERVICE_HOST", value: "127.0.0.1" },
      { name: "KUBERNETES_SERVICE_PORT", value: "7445" },
    ]);
    const kc = out.find((m) => m.id === "11-kube-config-in-cluster")!.objects[0] as { data: { kubeconfig: string } };
    expect(kc.data.kubeconfig).toContain("server: https://127.0.0.1:7445\n");
  });

  it("leaves out flannel (cni none), kube-proxy and CoreDNS when disabled; adds the Talos CRD when asked", () => {
    const ids = t.renderBootstrapManifests({ ...full, flannelEnabled: false, cniName: "none", proxyEnabled: false, coreDNSEnabled: false, talosAPIServiceEnabled: true }, secrets).map((m) => m.id);
    expect(ids).toEqual([
      "00-kubelet-bootstrapping-token",
      "01-csr-node-bootstrap",
      "01-csr-approver-role-binding",
      "01-csr-renewal-role-binding",
      "11-kube-config-in-cluster",
      "11-talos-node-rbac-template",
      "13-talos-service-account-crd",
    ]);
  });

  it("refuses pod security policies, as upstream", () => {
    expect(() => t.renderBootstrapManifests({ ...full, podSecurityPolicyEnabled: true }, secrets)).toThrow(/pod security policies are not supported/);
  });
});
