/** k8s controllers: Nodename, KubeletConfig, KubeletSpec, control plane StaticPods; plus the args merge rules. */
import { describe, expect, it } from "vitest";
import { K8S_NS, KubeletConfigType, KubeletSpecType, NodenameType, type KubeletConfigSpec, type KubeletSpecSpec, type NodenameSpec } from "../../../src/machinery/resources/types/k8s.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { args, mergeArgs, renderArgs } from "../../../src/machinery/kubernetes/args.js";
import { kubeletConfigController } from "../../../src/controllers/k8s/kubelet-config.js";
import { kubeletSpecController } from "../../../src/controllers/k8s/kubelet-spec.js";
import { nodenameController, nodenameFromHostname } from "../../../src/controllers/k8s/nodename.js";
import { dnsServiceAddrs } from "../../../src/machinery/kubernetes/network.js";
import { StaticPodServerStatusType } from "../../../src/machinery/resources/types/k8s-controlplane.js";
import { controlPlaneConfig, eventually, publishConfig, put, settle, spec, startRuntime } from "../runtime/harness.js";

const KUBELET = `  kubelet:
    image: ghcr.io/siderolabs/kubelet:v1.35.0
    extraArgs:
      rotate-server-certificates: "true"
    extraConfig:
      maxPods: 150
    extraMounts:
      - destination: /var/mnt
        type: bind
        source: /var/mnt
        options: [bind, rshared]
  nodeTaints:
    dedicated: infra:NoSchedule`;

describe("args", () => {
  it("merges extra args: overwrite, additive, denied; renders sorted flags", () => {
    const a = args({ b: "1", plugins: "NodeRestriction", c: ["x", "y"] });
    mergeArgs(a, args({ b: "2", plugins: "Foo,NodeRestriction" }), { plugins: "additive" });
    expect(renderArgs(a)).toEqual(["--b=2", "--c=x", "--c=y", "--plugins=NodeRestriction,Foo"]);
    expect(() => mergeArgs(a, args({ c: "z" }), { c: "denied" })).toThrow('extra arg "c" is not allowed');
  });

  it("derives the cluster DNS address from each service CIDR", () => {
    expect(dnsServiceAddrs(["10.96.0.0/12", "fc00:db8:20::/112"])).toEqual(["10.96.0.10", "fc00:db8:20::a"]);
  });
});

describe("k8s.NodenameController", () => {
  it("converts hostnames like upstream", () => {
    expect(nodenameFromHostname("Node_1.Example.")).toBe("node-1.example");
    expect(() => nodenameFromHostname("---")).toThrow(/could not convert/);
  });

  it("uses the configured hostname until HostnameStatus exists, then follows it (FQDN with registerWithFQDN)", async () => {
    const s = new InMemoryState();
    startRuntime(s, [nodenameController({ fallbackHostname: (cfg) => cfg.hostname() ?? "os-host" })]);
    publishConfig(s, controlPlaneConfig());
    await eventually(() => !!spec(s, K8S_NS, NodenameType.type, "nodename"), 2000, "nodename");
    expect(spec(s, K8S_NS, NodenameType.type, "nodename")).toEqual({ nodename: "node-1.example", hostnameVersion: "", skipNodeRegistration: false });

    const hs = put(s, "network", "HostnameStatuses.net.talos.dev", "hostname", { hostname: "Talos-ABC", domainname: "lan" });
    await eventually(() => spec<NodenameSpec>(s, K8S_NS, NodenameType.type, "nodename")?.nodename === "talos-abc", 2000, "from status");
    expect(spec<NodenameSpec>(s, K8S_NS, NodenameType.type, "nodename")!.hostnameVersion).toBe(String(hs.metadata.version));

    publishConfig(s, controlPlaneConfig({ machineExtra: "  kubelet:\n    registerWithFQDN: true\n    skipNodeRegistration: true" }));
    await eventually(() => spec<NodenameSpec>(s, K8S_NS, NodenameType.type, "nodename")?.nodename === "talos-abc.lan", 2000, "fqdn");
    expect(spec<NodenameSpec>(s, K8S_NS, NodenameType.type, "nodename")!.skipNodeRegistration).toBe(true);
  });
});

describe("k8s.KubeletConfigController + k8s.KubeletSpecController", () => {
  it("derive the kubelet config and spec from machine.kubelet, node name, addresses and machine type", async () => {
    const s = new InMemoryState();
    startRuntime(s, [kubeletConfigController(), kubeletSpecController()]);
    publishConfig(s, controlPlaneConfig({ machineExtra: KUBELET }));
    // Like upstream, nothing until the static pod server says where it listens.
    await settle();
    expect(spec(s, K8S_NS, KubeletConfigType.type, "kubelet")).toBeUndefined();
    put(s, K8S_NS, StaticPodServerStatusType.type, "static-pod-server-status", { url: "http://127.0.0.1:1234" }, "k8s.StaticPodServerController");
    await eventually(() => !!spec(s, K8S_NS, KubeletConfigType.type, "kubelet"), 2000, "kubelet config");
    const kc = spec<KubeletConfigSpec>(s, K8S_NS, KubeletConfigType.type, "kubelet")!;
    expect(kc).toMatchObject({
      image: "ghcr.io/siderolabs/kubelet:v1.35.0",
      clusterDNS: ["10.96.0.10"],
      clusterDomain: "cluster.local",
      extraArgs: { "rotate-server-certificates": { values: ["true"] } },
      extraConfig: { maxPods: 150 },
      staticPodListURL: "http://127.0.0.1:1234",
      registerWithTaints: { dedicated: "infra:NoSchedule" },
      allowSchedulingOnControlPlane: false,
    });
    expect(kc.extraMounts[0]).toEqual({ destination: "/var/mnt", type: "bind", source: "/var/mnt", options: ["bind", "rshared"], uidmappings: [], gidmappings: [] });

    // The spec waits for the node name.
    await settle();
    expect(spec(s, K8S_NS, KubeletSpecType.type, "kubelet")).toBeUndefined();
    put(s, K8S_NS, NodenameType.type, "nodename", { nodename: "node-1", hostnameVersion: "1", skipNodeRegistration: false });
    put(s, "network", "NodeAddresses.net.talos.dev", "routed-no-k8s", { addresses: ["10.5.0.2/24", "fd00::2/64"] });
    await eventually(() => !!spec(s, K8S_NS, KubeletSpecType.type, "kubelet"), 2000, "kubelet spec");
    const ks = spec<KubeletSpecSpec>(s, K8S_NS, KubeletSpecType.type, "kubelet")!;
    expect(ks.image).toBe("ghcr.io/siderolabs/kubelet:v1.35.0");
    expect(ks.expectedNodename).toBe("node-1");
    expect(ks.args).toEqual([
      "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubeconfig",
      "--cert-dir=/var/lib/kubelet/pki",
      "--config=/etc/kubernetes/kubelet.yaml",
      "--hostname-override=node-1",
      "--kubeconfig=/etc/kubernetes/kubeconfig-kubelet",
      "--node-ip=10.5.0.2,fd00::2",
      "--rotate-server-certificates=true",
    ]);
    expect(ks.extraMounts).toEqual(kc.extraMounts);
    expect(ks.config).toMatchObject({
      apiVersion: "kubelet.config.k8s.io/v1beta1",
      kind: "KubeletConfiguration",
      maxPods: 150,
      staticPodPath: "/etc/kubernetes/manifests",
      staticPodURL: "http://127.0.0.1:1234",
      clusterDNS: ["10.96.0.10"],
      // A control plane registers tainted (scheduling on control planes is not allowed in this config).
      registerWithTaints: [
        { key: "dedicated", value: "infra", effect: "NoSchedule" },
        { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" },
      ],
      systemReserved: { memory: "512Mi" },
      protectKernelDefaults: true,
    });
  });

  it("refuses protected kubelet configuration fields and denied flags (the reconcile fails, with the reason)", async () => {
    const s = new InMemoryState();
    const rt = startRuntime(s, [kubeletConfigController(), kubeletSpecController()]);
    put(s, K8S_NS, StaticPodServerStatusType.type, "static-pod-server-status", { url: "http://127.0.0.1:1234" }, "k8s.StaticPodServerController");
    put(s, K8S_NS, NodenameType.type, "nodename", { nodename: "node-1", hostnameVersion: "1", skipNodeRegistration: false });
    publishConfig(s, controlPlaneConfig({ machineExtra: "  kubelet:\n    extraConfig:\n      port: 1\n" }));
    await eventually(() => (rt.status("k8s.KubeletSpecController")?.consecutiveFailures ?? 0) > 0, 2000, "failure");
    expect(rt.status("k8s.KubeletSpecController")!.lastError).toBe('field "port" can\'t be overridden');
    publishConfig(s, controlPlaneConfig({ machineExtra: "  kubelet:\n    extraArgs:\n      kubeconfig: /x\n" }));
    await eventually(() => /kubeconfig/.test(rt.status("k8s.KubeletSpecController")?.lastError ?? ""), 2000, "denied flag");
  });

  it("publishes nothing when the node runs no kubelet", async () => {
    const s = new InMemoryState();
    startRuntime(s, [kubeletConfigController({ runsKubelet: () => false })]);
    publishConfig(s, controlPlaneConfig());
    await settle();
    expect(s.list(K8S_NS, KubeletConfigType.type)).toEqual([]);
  });
});
