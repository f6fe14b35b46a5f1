/** Pure helpers behind the Kubernetes status controllers: selectors, node IP filtering, KubePrism settings, upstream scoring. */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/machinery/config/index.js";
import { inlineKubeconfigFiles } from "../../../src/machinery/kubernetes/kubeconfig-files.js";
import { kubePrismEndpoints, kubePrismSettings } from "../../../src/machinery/kubernetes/kubeprism.js";
import { filterIPs, nodeIPConfigSpec, pickNodeIPs } from "../../../src/machinery/kubernetes/node-ip.js";
import { collectionPath, DAEMONSETS, NODES, PODS } from "../../../src/machinery/kubernetes/objects.js";
import { matchesFields, matchesLabels, parseLabelSelector } from "../../../src/machinery/kubernetes/selector.js";
import { latencyTier, UpstreamList } from "../../../src/machinery/net/upstreams.js";
import type { MemberSpec } from "../../../src/machinery/resources/types/cluster.js";
import { NodeIPConfigType } from "../../../src/machinery/resources/types/k8s-status.js";

describe("label and field selectors", () => {
  it("parses the forms the checks use and matches like the API server", () => {
    expect(parseLabelSelector("k8s-app in (kube-apiserver,kube-scheduler, kube-controller-manager)")).toEqual([
      { key: "k8s-app", op: "in", values: ["kube-apiserver", "kube-scheduler", "kube-controller-manager"] },
    ]);
    expect(parseLabelSelector("k8s-app = kube-apiserver")).toEqual([{ key: "k8s-app", op: "=", value: "kube-apiserver" }]);
    expect(parseLabelSelector("a!=b,!c,d")).toEqual([
      { key: "a", op: "!=", value: "b" },
      { key: "c", op: "!exists" },
      { key: "d", op: "exists" },
    ]);
    expect(matchesLabels("k8s-app=kube-proxy", { "k8s-app": "kube-proxy" })).toBe(true);
    expect(matchesLabels("k8s-app=kube-proxy", { "k8s-app": "kube-dns" })).toBe(false);
    expect(matchesLabels("k8s-app in (a,b)", { "k8s-app": "b" })).toBe(true);
    expect(matchesLabels("k8s-app notin (a,b)", {})).toBe(true);
    expect(matchesLabels("a!=b", { a: "b" })).toBe(false);
    expect(() => parseLabelSelector("a in b")).toThrow('unable to parse requirement: "a in b"');
    expect(matchesFields("metadata.name=n1", { metadata: { name: "n1" } })).toBe(true);
    expect(matchesFields("metadata.name=n1", { metadata: { name: "n2" } })).toBe(false);
    expect(() => matchesFields("spec.nodeName=x", { metadata: { name: "n" } })).toThrow("field label not supported: spec.nodeName");
  });

  it("builds collection paths for core and group kinds", () => {
    expect(collectionPath(NODES)).toBe("/api/v1/nodes");
    expect(collectionPath(PODS, "kube-system")).toBe("/api/v1/namespaces/kube-system/pods");
    expect(collectionPath(DAEMONSETS, "kube-system")).toBe("/apis/apps/v1/namespaces/kube-system/daemonsets");
  });
});

const CONFIG = (extra = "", cluster = "") => `version: v1alpha1
machine:
  type: controlplane
${extra}
cluster:
  controlPlane:
    endpoint: https://cp.example:6443
  network:
    podSubnets: [10.244.0.0/16]
    serviceSubnets: [10.96.0.0/12, fd00:10:96::/112]
${cluster}`;

describe("node IP", () => {
  it("defaults valid subnets to the service CIDR families and excludes pod/service CIDRs and VIPs", () => {
    const cfg = loadConfig(
      CONFIG(`  network:
    interfaces:
      - interface: eth0
        vip: { ip: 10.5.0.100 }
        vlans:
          - vlanId: 5
            vip: { ip: 10.6.0.100 }`),
    );
    const spec = nodeIPConfigSpec(cfg);
    expect(spec).toEqual({
      validSubnets: ["0.0.0.0/0", "::/0"],
      excludeSubnets: ["10.244.0.0/16", "10.96.0.0/12", "fd00:10:96::/112", "10.5.0.100", "10.6.0.100"],
    });
    expect(NodeIPConfigType.toYaml!({ validSubnets: [], excludeSubnets: ["a"] })).toBe("excludeSubnets:\n    - a\n");
    const explicit = nodeIPConfigSpec(loadConfig(CONFIG("  kubelet:\n    nodeIP:\n      validSubnets: [192.168.0.0/16]")));
    expect(explicit.validSubnets).toEqual(["192.168.0.0/16"]);
  });

  it("filters like siderolabs/net FilterIPs and keeps one address per family", () => {
    expect(filterIPs(["10.0.0.1", "192.168.1.1", "fd00::1"], ["192.168.0.0/16", "0.0.0.0/0", "!10.0.0.1"])).toEqual(["192.168.1.1"]);
    const spec = { validSubnets: ["0.0.0.0/0", "::/0"], excludeSubnets: ["10.244.0.0/16", "10.5.0.100"] };
    expect(pickNodeIPs(["10.244.1.5", "10.5.0.100", "10.5.0.2", "10.5.0.3", "fd00::2"], spec)).toEqual({ ips: ["10.5.0.2", "fd00::2"], skipped: ["10.5.0.3"] });
    expect(() => filterIPs(["10.0.0.1"], ["nope"])).toThrow('failed to parse subnet "nope"');
  });
});

describe("KubePrism settings and endpoints", () => {
  it("reads v1alpha1 features and the 1.14 document, default port 7445", () => {
    expect(kubePrismSettings(loadConfig(CONFIG("  features:\n    kubePrism:\n      enabled: true")))).toEqual({ enabled: true, port: 7445 });
    expect(kubePrismSettings(loadConfig(CONFIG("  features:\n    kubePrism:\n      enabled: true\n      port: 7446")))).toEqual({ enabled: true, port: 7446 });
    expect(kubePrismSettings(loadConfig(CONFIG()))).toEqual({ enabled: false, port: 7445 });
    const multi = loadConfig(`${CONFIG()}---\napiVersion: v1alpha1\nkind: KubePrismConfig\nport: 7447\n`);
    expect(kubePrismSettings(multi)).toEqual({ enabled: true, port: 7447 });
  });

  it("lists the cluster endpoint, localhost on control planes and control plane members", () => {
    const members: MemberSpec[] = [
      { nodeId: "a", addresses: ["10.5.0.3", "fd00::3"], hostname: "cp2", machineType: "controlplane", operatingSystem: "", controlPlane: { port: 6443 } },
      { nodeId: "b", addresses: ["10.5.0.4"], hostname: "w1", machineType: "worker", operatingSystem: "" },
    ];
    const cfg = loadConfig(CONFIG("", "  \n"));
    expect(kubePrismEndpoints(cfg, true, members)).toEqual([
      { host: "cp.example", port: 6443 },
      { host: "localhost", port: 6443 },
      { host: "10.5.0.3", port: 6443 },
      { host: "fd00::3", port: 6443 },
    ]);
    const noPort = loadConfig(CONFIG().replace("https://cp.example:6443", "https://[fd00::9]"));
    expect(kubePrismEndpoints(noPort, false, [])).toEqual([{ host: "fd00::9", port: 443 }]);
  });
});

describe("upstream scoring", () => {
  it("picks round-robin among healthy upstreams of the fastest tier and drops failing ones", () => {
    const l = new UpstreamList(["a", "b"]);
    expect([l.pick(), l.pick(), l.pick()]).toEqual(["a", "b", "a"]);
    l.down("a");
    expect(l.score("a")).toBe(0);
    expect([l.pick(), l.pick()]).toEqual(["b", "a"]);
    l.down("a");
    expect([l.pick(), l.pick()]).toEqual(["b", "b"]);
    l.up("b", latencyTier(50));
    l.up("a", latencyTier(0.01));
    expect(l.score("a")).toBe(0);
    expect(l.pick()).toBe("a"); // tier 0 beats tier 3
    for (let i = 0; i < 10; i++) l.down("a");
    expect(l.score("a")).toBe(-3);
    l.reconcile(["a", "c"]);
    expect(l.addresses()).toEqual(["a", "c"]);
    expect(l.score("a")).toBe(-3);
    expect(l.score("c")).toBe(1);
    l.down("c");
    l.down("c");
    expect(l.healthy()).toBe(false);
    expect(l.pick()).toBeUndefined();
    expect([latencyTier(0), latencyTier(0.5), latencyTier(5), latencyTier(2000)]).toEqual([0, 1, 2, 5]);
  });
});

describe("kubeconfig file references", () => {
  it("inlines certificate files through the reader and leaves inline data alone", async () => {
    const kc = `apiVersion: v1
kind: Config
clusters:
  - name: local
    cluster:
      server: https://127.0.0.1:7445
      certificate-authority-data: Q0E=
users:
  - name: kubelet
    user:
      client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem
      client-key: /var/lib/kubelet/pki/kubelet-client-current.pem
contexts:
  - name: kubelet@local
    context: { cluster: local, user: kubelet }
current-context: kubelet@local
`;
    const reads: string[] = [];
    const out = await inlineKubeconfigFiles(kc, async (p) => {
      reads.push(p);
      return "PEM";
    });
    expect(reads).toEqual(["/var/lib/kubelet/pki/kubelet-client-current.pem", "/var/lib/kubelet/pki/kubelet-client-current.pem"]);
    expect(out).toContain("client-certificate-data: UEVN");
    expect(out).toContain("client-key-data: UEVN");
    expect(out).not.toContain("client-certificate:");
    expect(out).toContain("certificate-authority-data: Q0E=");
    await expect(inlineKubeconfigFiles(kc, async () => Promise.reject(new Error("ENOENT: no such file")))).rejects.toThrow(
      "kubeconfig client-certificate /var/lib/kubelet/pki/kubelet-client-current.pem: ENOENT: no such file",
    );
  });
});
