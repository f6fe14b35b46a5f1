/**
 * The bootstrap manifest chain on the real store and runtime: config → BootstrapManifestsConfig and
 * ExtraManifestsConfig → Manifests (bootstrap and extra, inline and URL) → the apply against an in-memory API
 * (ordering, inventory, skip/adopt rules, error collection and retries) → ManifestStatus.
 */
import { createServer, type Server } from "node:http";
import { fromBinary, toJson } from "@bufbuild/protobuf";
import { BootstrapManifestsConfigSpecSchema, ManifestSpecSchema } from "../../../src/machinery/api/gen/resource/definitions/k8s/k8s_pb.js";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { KubeApiError, KubeConnectionError } from "../../../src/host/kube/api.js";
import type { KubeObject } from "../../../src/machinery/kubernetes/objects.js";
import { loadConfig } from "../../../src/machinery/config/index.js";
import { bootstrapManifestsConfigSpec, extraManifestsConfigSpec, imageVersionAtLeast } from "../../../src/machinery/kubernetes/manifests-config.js";
import { formatObjectRef, parseManifestYaml, parseObjectRef } from "../../../src/machinery/kubernetes/manifest-objects.js";
import { newResource } from "../../../src/machinery/resources/resource.js";
import {
  BootstrapManifestsConfigType,
  CONTROLPLANE_NS,
  ExtraManifestsConfigType,
  ManifestStatusType,
  ManifestType,
  type BootstrapManifestsConfigSpec,
  type ExtraManifestsConfigSpec,
  type KubeObjectData,
  type ManifestSpec,
  type ManifestStatusSpec,
} from "../../../src/machinery/resources/types/k8s-manifests.js";
import { KubernetesCertsType, KubernetesRootType, SECRETS_NS } from "../../../src/machinery/resources/types/secrets.js";
import { RUNTIME_NS, ServiceType } from "../../../src/machinery/resources/types/runtime.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { applyManifests, INVENTORY_ANNOTATION } from "../../../src/controllers/k8s/manifest-apply.js";
import { kubernetesManifestControllers } from "../../../src/controllers/k8s/manifest-controllers.js";
import { extraManifestController } from "../../../src/controllers/k8s/extra-manifest.js";
import { FakeKubernetes } from "../../helpers/fake-kubernetes.js";
import { controlPlaneConfig, eventually, publishConfig, put, settle, spec, startRuntime } from "../runtime/harness.js";

const PRISM = "  features:\n    kubePrism:\n      enabled: true\n      port: 7445";

function cfg(opts: { machineExtra?: string; clusterExtra?: string; type?: string } = {}) {
  return loadConfig(controlPlaneConfig(opts));
}

const manifests = (s: InMemoryState) =>
  s
    .list(CONTROLPLANE_NS, ManifestType.type)
    .map((r) => r.metadata.id)
    .sort();

function putRoot(s: InMemoryState, tokenID = "abcdef") {
  put(s, SECRETS_NS, KubernetesRootType.type, "k8s", { bootstrapTokenID: tokenID, bootstrapTokenSecret: "0123456789abcdef" }, "secrets.KubernetesRootController");
}

describe("BootstrapManifestsConfig from the machine config", () => {
  it("uses KubePrism, the 10th service IP, nftables for 1.31+, the default images and flannel", () => {
    const s = bootstrapManifestsConfigSpec(cfg({ machineExtra: PRISM }));
    expect(s).toEqual<BootstrapManifestsConfigSpec>({
      server: "https://127.0.0.1:7445",
      clusterDomain: "cluster.local",
      podCIDRs: ["10.244.0.0/16"],
      proxyEnabled: true,
      proxyImage: "registry.k8s.io/kube-proxy:v1.37.2",
      proxyArgs: [
        "--cluster-cidr=10.244.0.0/16",
        "--conntrack-max-per-core=0",
        "--hostname-override=$(NODE_NAME)",
        "--kubeconfig=/etc/kubernetes/kubeconfig",
        "--proxy-mode=nftables",
      ],
      coreDNSEnabled: true,
      coreDNSImage: "registry.k8s.io/coredns/coredns:v1.14.6",
      dnsServiceIP: "10.96.0.10",
      dnsServiceIPv6: "",
      flannelEnabled: true,
      flannelImage: "ghcr.io/siderolabs/flannel:v0.28.9",
      flannelExtraArgs: [],
      flannelKubeServiceHost: "127.0.0.1",
      flannelKubeServicePort: "7445",
      flannelKubeNetworkPoliciesEnabled: false,
      flannelKubeNetworkPoliciesImage: "registry.k8s.io/networking/kube-network-policies:v1.1.0",
      podSecurityPolicyEnabled: false,
      talosAPIServiceEnabled: false,
      cniName: "flannel",
    });
  });

  it("without KubePrism uses the cluster endpoint and leaves flannel on the service network", () => {
    const s = bootstrapManifestsConfigSpec(cfg());
    expect(s.server).toBe("https://10.5.0.2:6443");
    expect([s.flannelKubeServiceHost, s.flannelKubeServicePort]).toEqual(["", ""]);
  });

  it("follows cni none, a disabled proxy and CoreDNS, proxy mode/args/image, dual-stack services", () => {
    const s = bootstrapManifestsConfigSpec(
      cfg({
        clusterExtra: `  proxy:
    image: registry.k8s.io/kube-proxy:v1.30.1
    extraArgs:
      metrics-bind-address: 0.0.0.0:10249
  coreDNS:
    disabled: true
`,
      }).withV1Alpha1((c) => {
        c.cluster.network = { ...c.cluster.network, cni: { name: "none" }, serviceSubnets: ["10.96.0.0/12", "fd00:10::/108"] };
      }),
    );
    expect([s.cniName, s.flannelEnabled, s.coreDNSEnabled]).toEqual(["none", false, false]);
    expect(s.proxyArgs).toContain("--proxy-mode=iptables");
    expect(s.proxyArgs).toContain("--metrics-bind-address=0.0.0.0:10249");
    expect([s.dnsServiceIP, s.dnsServiceIPv6]).toEqual(["10.96.0.10", "fd00:10::a"]);
    expect(bootstrapManifestsConfigSpec(cfg({ clusterExtra: "  proxy:\n    disabled: true\n    mode: ipvs\n" }))).toMatchObject({
      proxyEnabled: false,
      proxyArgs: expect.arrayContaining(["--proxy-mode=ipvs"]),
    });
    expect(() => bootstrapManifestsConfigSpec(cfg({ clusterExtra: "  proxy:\n    extraArgs:\n      kubeconfig: /x\n" }))).toThrow(/"kubeconfig" is not allowed/);
  });

  it("compares image tags as versions", () => {
    expect(imageVersionAtLeast("registry.k8s.io/kube-proxy:v1.31.0", [1, 31, 0])).toBe(true);
    expect(imageVersionAtLeast("registry.k8s.io/kube-proxy:v1.31.0-rc.1", [1, 31, 0])).toBe(true);
    expect(imageVersionAtLeast("127.0.0.1:5000/kube-proxy:v1.30.9", [1, 31, 0])).toBe(false);
    expect(imageVersionAtLeast("127.0.0.1:5000/kube-proxy", [1, 31, 0])).toBe(false);
    expect(imageVersionAtLeast("kube-proxy:latest", [1, 31, 0])).toBe(false);
    expect(imageVersionAtLeast("kube-proxy:1.40@sha256:00", [1, 31, 0])).toBe(true);
  });

  it("lists extra manifests with upstream's priorities", () => {
    const s = extraManifestsConfigSpec(
      cfg({
        clusterExtra: `  extraManifests: [https://example.test/a.yaml]
  extraManifestHeaders: {X-Token: t}
  externalCloudProvider:
    enabled: true
    manifests: [https://example.test/ccm.yaml]
  inlineManifests:
    - name: ns
      contents: |
        apiVersion: v1
        kind: Namespace
        metadata: {name: demo}
`,
      }),
    );
    expect(s.extraManifests.map((m) => `${m.priority}-${m.name}`)).toEqual(["30-https://example.test/ccm.yaml", "99-https://example.test/a.yaml", "99-ns"]);
    expect(s.extraManifests[1].extraHeaders).toEqual({ "X-Token": "t" });
    expect(s.extraManifests[2].inlineManifest).toContain("kind: Namespace");
  });
});

describe("manifest YAML and inventory keys", () => {
  it("reads every document, skips comment-only ones, unwraps lists, and names what is wrong", () => {
    const objs = parseManifestYaml(`# leading comment
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
# only a comment
---
apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: Secret, metadata: {name: b}}
  - {apiVersion: v1, kind: Secret, metadata: {name: c}}
`);
    expect(objs.map((o) => `${o.kind}/${(o.metadata as { name: string }).name}`)).toEqual(["ConfigMap/a", "Secret/b", "Secret/c"]);
    expect(() => parseManifestYaml("apiVersion: v1\nmetadata: {name: x}\n")).toThrow(/document 1: Object 'Kind' is missing/);
    expect(() => parseManifestYaml("kind: ConfigMap\n---\n- a\n")).toThrow(/document 1: Object 'apiVersion' is missing/);
    expect(() => parseManifestYaml("a: [\n")).toThrow(/document 1/);
  });

  it("formats references as cli-utils does: RBAC colons as __, cluster-scoped with an empty namespace", () => {
    expect(formatObjectRef({ namespace: "", name: "system:coredns", group: "rbac.authorization.k8s.io", kind: "ClusterRole" })).toBe(
      "_system__coredns_rbac.authorization.k8s.io_ClusterRole",
    );
    expect(formatObjectRef({ namespace: "kube-system", name: "coredns", group: "apps", kind: "Deployment" })).toBe("kube-system_coredns_apps_Deployment");
    expect(parseObjectRef("_system__coredns_rbac.authorization.k8s.io_ClusterRole")).toEqual({
      namespace: "",
      name: "system:coredns",
      group: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
    });
    expect(parseObjectRef("kube-system_kube-dns__Service")).toEqual({ namespace: "kube-system", name: "kube-dns", group: "", kind: "Service" });
    expect(() => parseObjectRef("nounderscores")).toThrow(/unable to parse/);
    expect(() => parseObjectRef("a_b_c_d_e")).toThrow(/too many fields/);
  });
});

describe("Manifest resource encodings", () => {
  it("renders the spec as the bare list of objects with sorted keys, and encodes Structs", () => {
    const yaml = ManifestType.toYaml!({ items: [{ kind: "ConfigMap", apiVersion: "v1", metadata: { namespace: "x", name: "a" }, data: { b: "1", a: "2" } }] });
    // yaml.v3's layout: 4-space mappings, even inside a sequence item.
    expect(yaml).toBe('- apiVersion: v1\n  data:\n      a: "2"\n      b: "1"\n  kind: ConfigMap\n  metadata:\n      name: a\n      namespace: x\n');
    const items = [{ kind: "ConfigMap", apiVersion: "v1", spec: { replicas: 2, list: ["a", { b: true }] } }];
    expect(toJson(ManifestSpecSchema, fromBinary(ManifestSpecSchema, ManifestType.toProto({ items })))).toEqual({ items: [{ object: items[0] }] });
    const b = bootstrapManifestsConfigSpec(cfg({ machineExtra: PRISM }));
    expect(BootstrapManifestsConfigType.toYaml!(b)).toMatch(/^string: https:\/\/127\.0\.0\.1:7445\nclusterDomain: cluster\.local\npodCIDRs:\n {4}- 10\.244\.0\.0\/16\n/);
    expect(toJson(BootstrapManifestsConfigSpecSchema, fromBinary(BootstrapManifestsConfigSpecSchema, BootstrapManifestsConfigType.toProto(b)))).toMatchObject({
      server: "https://127.0.0.1:7445",
      podCidRs: ["10.244.0.0/16"],
      coreDnsEnabled: true,
      dnsServiceIp: "10.96.0.10",
      flannelKubeServicePort: "7445",
      cniName: "flannel",
    });
  });
});

describe("k8s.ManifestController and k8s.ExtraManifestController", () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    server = undefined;
  });

  it("renders the bootstrap manifests on a control plane, follows cni none, and removes them on a worker", async () => {
    const s = new InMemoryState();
    startRuntime(s, kubernetesManifestControllers());
    publishConfig(s, controlPlaneConfig({ machineExtra: PRISM }));
    putRoot(s);
    await eventually(() => manifests(s).includes("10-kube-proxy"), 3000, "manifests");
    expect(manifests(s)).toEqual([
      "00-kubelet-bootstrapping-token",
      "01-csr-approver-role-binding",
      "01-csr-node-bootstrap",
      "01-csr-renewal-role-binding",
      "05-flannel",
      "10-kube-proxy",
      "11-core-dns",
      "11-core-dns-svc",
      "11-kube-config-in-cluster",
      "11-talos-node-rbac-template",
    ]);
    const token = spec<ManifestSpec>(s, CONTROLPLANE_NS, ManifestType.type, "00-kubelet-bootstrapping-token")!;
    expect(token.items[0]).toMatchObject({ metadata: { name: "bootstrap-token-abcdef" }, stringData: { "token-id": "abcdef" } });

    publishConfig(s, controlPlaneConfig({ machineExtra: PRISM, clusterExtra: "  proxy:\n    disabled: true\n" }).replace("serviceSubnets: [10.96.0.0/12]", "serviceSubnets: [10.96.0.0/12]\n    cni:\n      name: none"));
    await eventually(() => !manifests(s).includes("05-flannel") && !manifests(s).includes("10-kube-proxy"), 3000, "no flannel/proxy");
    expect(spec<BootstrapManifestsConfigSpec>(s, CONTROLPLANE_NS, BootstrapManifestsConfigType.type, "manifests")!.cniName).toBe("none");

    publishConfig(s, controlPlaneConfig({ type: "worker" }));
    await eventually(() => manifests(s).length === 0, 3000, "worker: none");
    expect(s.get({ namespace: CONTROLPLANE_NS, type: BootstrapManifestsConfigType.type, id: "manifests" })).toBeUndefined();
  });

  it("waits for the Kubernetes root secrets (the bootstrap token)", async () => {
    const s = new InMemoryState();
    startRuntime(s, kubernetesManifestControllers());
    publishConfig(s, controlPlaneConfig());
    await eventually(() => !!s.get({ namespace: CONTROLPLANE_NS, type: BootstrapManifestsConfigType.type, id: "manifests" }), 3000, "config");
    await settle();
    expect(manifests(s)).toEqual([]);
    putRoot(s, "zzzzzz");
    await eventually(() => manifests(s).length > 0, 3000, "rendered");
  });

  it("renders inline manifests, and downloads URL ones (with the configured headers) once the network is up", async () => {
    const seen: (string | undefined)[] = [];
    server = createServer((req, res) => {
      seen.push(req.headers["x-token"] as string | undefined);
      if (req.url === "/missing.yaml") {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "content-type": "application/yaml" }).end("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-url\n  namespace: default\n");
    });
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/cm.yaml`;

    const s = new InMemoryState();
    startRuntime(s, kubernetesManifestControllers());
    publishConfig(
      s,
      controlPlaneConfig({
        clusterExtra: `  extraManifests: [${url}]
  extraManifestHeaders: {X-Token: secret}
  inlineManifests:
    - name: demo
      contents: |
        apiVersion: v1
        kind: Namespace
        metadata: {name: demo}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: c, namespace: demo}
`,
      }),
    );
    await eventually(() => manifests(s).includes("99-demo"), 3000, "inline");
    expect(spec<ManifestSpec>(s, CONTROLPLANE_NS, ManifestType.type, "99-demo")!.items.map((o) => o.kind)).toEqual(["Namespace", "ConfigMap"]);
    await settle();
    expect(manifests(s)).not.toContain(`99-${url}`);
    expect(seen).toEqual([]);

    put(s, "network", "NetworkStatuses.net.talos.dev", "status", { addressReady: true, connectivityReady: true, hostnameReady: true, etcFilesReady: true });
    await eventually(() => manifests(s).includes(`99-${url}`), 3000, "downloaded");
    expect(spec<ManifestSpec>(s, CONTROLPLANE_NS, ManifestType.type, `99-${url}`)!.items[0]).toMatchObject({ metadata: { name: "from-url" } });
    expect(seen[0]).toBe("secret");
  });

  it("fails naming the manifest when a download or an inline manifest is bad, and keeps the good ones", async () => {
    server = createServer((_req, res) => res.writeHead(404).end());
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/missing.yaml`;
    const s = new InMemoryState();
    const rt = startRuntime(s, [extraManifestController()]);
    put(s, "network", "NetworkStatuses.net.talos.dev", "status", { addressReady: true, connectivityReady: true, hostnameReady: true, etcFilesReady: true });
    put(s, CONTROLPLANE_NS, ExtraManifestsConfigType.type, "extra-manifests", {
      extraManifests: [
        { name: url, url, priority: "99", extraHeaders: {}, inlineManifest: "" },
        { name: "broken", url: "", priority: "99", extraHeaders: {}, inlineManifest: "metadata: {name: x}\n" },
        { name: "ok", url: "", priority: "99", extraHeaders: {}, inlineManifest: "apiVersion: v1\nkind: Namespace\nmetadata: {name: ok}\n" },
        { name: "git", url: "git::https://example.test/repo", priority: "05", extraHeaders: {}, inlineManifest: "" },
      ],
    } satisfies ExtraManifestsConfigSpec, "k8s.ControlPlaneExtraManifestsController");
    const lastError = () => rt.statuses().find((c) => c.name === "k8s.ExtraManifestController")?.lastError ?? "";
    await eventually(() => lastError().includes("3 extra manifests failed"), 3000, `the error (have ${JSON.stringify(lastError())})`);
    const err = rt.statuses().find((c) => c.name === "k8s.ExtraManifestController")!.lastError!;
    expect(err).toContain(`manifest "${url}": error downloading "${url}": bad response code: 404`);
    expect(err).toContain(`inline manifest "broken": document 1: Object 'Kind' is missing`);
    expect(err).toContain(`manifest "git": error downloading "git::https://example.test/repo": unsupported scheme "git"`);
    expect(manifests(s)).toEqual(["99-ok"]);
  });
});

// ------------------------------------------------------------------------------------------------ apply

const cm = (name: string, namespace?: string, extra: Record<string, unknown> = {}): KubeObjectData => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, ...(namespace ? { namespace } : {}), ...extra },
  data: { k: "v" },
});

function manifest(id: string, items: KubeObjectData[]) {
  return newResource({ namespace: CONTROLPLANE_NS, type: ManifestType.type, id }, { items } as ManifestSpec);
}

const CRD: KubeObjectData = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "widgets.example.test" },
  spec: { group: "example.test", scope: "Namespaced", names: { kind: "Widget", plural: "widgets" }, versions: [{ name: "v1", served: true, storage: true }] },
};

describe("applyManifests", () => {
  it("creates Namespaces, then CRDs, then the rest, with field manager talos and the inventory annotation", async () => {
    const api = new FakeKubernetes();
    const widget = { apiVersion: "example.test/v1", kind: "Widget", metadata: { name: "w", namespace: "demo" } };
    const res = await applyManifests(api.client(), [
      manifest("10-app", [widget, cm("app", "demo")]),
      manifest("20-base", [CRD, { apiVersion: "v1", kind: "Namespace", metadata: { name: "zeta" } }, { apiVersion: "v1", kind: "Namespace", metadata: { name: "demo" } }]),
    ]);
    expect(api.applied()).toEqual([
      "v1/Namespace/demo",
      "v1/Namespace/zeta",
      "apiextensions.k8s.io/v1/CustomResourceDefinition/widgets.example.test",
      "example.test/v1/Widget/demo/w",
      "v1/ConfigMap/demo/app",
    ]);
    expect(api.calls.filter((c) => c.verb === "apply").every((c) => c.fieldManager === "talos")).toBe(true);
    expect(api.getObject("v1", "ConfigMap", "app", "demo")!.metadata!.annotations).toEqual({ [INVENTORY_ANNOTATION]: "talos-bootstrap-manifests-inventory" });
    expect(res.created).toHaveLength(5);
    expect(api.inventory()).toEqual([
      "_demo__Namespace",
      "_widgets.example.test_apiextensions.k8s.io_CustomResourceDefinition",
      "_zeta__Namespace",
      "demo_app__ConfigMap",
      "demo_w_example.test_Widget",
    ]);
  });

  it("defaults a namespaced object to `default`, drops a cluster-scoped object's namespace, and transcodes RBAC names", async () => {
    const api = new FakeKubernetes();
    const crb = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "system:x", namespace: "oops" } };
    await applyManifests(api.client(), [manifest("99-x", [cm("plain"), crb])]);
    expect(api.getObject("v1", "ConfigMap", "plain", "default")).toBeDefined();
    expect(api.getObject("rbac.authorization.k8s.io/v1", "ClusterRole", "system:x")!.metadata!.namespace).toBeUndefined();
    expect(api.inventory()).toEqual(["_system__x_rbac.authorization.k8s.io_ClusterRole", "default_plain__ConfigMap", ].sort());
  });

  it("skips what the inventory lists (a deleted object is not re-created) and adopts what already exists", async () => {
    const api = new FakeKubernetes();
    api.put({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "theirs", namespace: "kube-system" }, data: { mine: "no" } });
    const list = [manifest("00-a", [cm("ours", "kube-system"), cm("theirs", "kube-system")])];
    const first = await applyManifests(api.client(), list);
    expect(first).toEqual({ created: ["/v1/ConfigMap/ours"], adopted: ["/v1/ConfigMap/theirs"] });
    // Adopted, not changed: no apply, no annotation, the other owner's data kept.
    expect(api.applied()).toEqual(["v1/ConfigMap/kube-system/ours"]);
    expect(api.getObject("v1", "ConfigMap", "theirs", "kube-system")!.data).toEqual({ mine: "no" });
    expect(api.inventory()).toEqual(["kube-system_ours__ConfigMap", "kube-system_theirs__ConfigMap"]);

    const inventoryVersion = api.getObject("v1", "ConfigMap", "talos-bootstrap-manifests-inventory", "kube-system")!.metadata!.resourceVersion;
    api.calls.length = 0;
    api.delete("v1", "ConfigMap", "ours", "kube-system");
    const second = await applyManifests(api.client(), list);
    expect(second).toEqual({ created: [], adopted: [] });
    expect(api.getObject("v1", "ConfigMap", "ours", "kube-system")).toBeUndefined();
    expect(api.calls.filter((c) => c.verb !== "get" && c.verb !== "scope")).toEqual([]);
    // A run that changes nothing does not rewrite the inventory either.
    expect(api.getObject("v1", "ConfigMap", "talos-bootstrap-manifests-inventory", "kube-system")!.metadata!.resourceVersion).toBe(inventoryVersion);
  });

  it("collects bad manifests into one error naming each, applies the rest, and saves the inventory", async () => {
    const api = new FakeKubernetes();
    api.reject = (o) => (o.metadata?.name === "invalid" ? new KubeApiError(422, "Invalid", 'ConfigMap "invalid" is invalid: data[bad key]: Invalid value') : undefined);
    const err = await applyManifests(api.client(), [
      manifest("10-one", [{ apiVersion: "example.test/v1", kind: "Gadget", metadata: { name: "g" } }, cm("fine", "default")]),
      manifest("20-two", [cm("invalid", "default"), cm("foreign", "default", { annotations: { [INVENTORY_ANNOTATION]: "someone-else" } })]),
    ]).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    const msg = (err as Error).message;
    expect(msg).toMatch(/^3 errors occurred:/);
    expect(msg).toContain('10-one: error creating mapping for object example.test/v1/Gadget/g: no matches for kind "Gadget" in version "example.test/v1"');
    expect(msg).toContain('20-two: error creating /v1/ConfigMap/invalid: ConfigMap "invalid" is invalid');
    expect(msg).toContain("20-two: unexpected foreign inventory annotation on /v1/ConfigMap/foreign");
    expect(api.getObject("v1", "ConfigMap", "fine", "default")).toBeDefined();
    expect(api.inventory()).toEqual(["default_fine__ConfigMap"]);
  });

  it("stops at a connection error but keeps what was created in the inventory", async () => {
    const api = new FakeKubernetes();
    const client = api.client();
    api.reject = (o) => {
      if (o.metadata?.name !== "two") return undefined;
      api.down = true;
      throw new KubeConnectionError("PATCH https://127.0.0.1:6443/api/v1/namespaces/default/configmaps/two: ECONNREFUSED");
    };
    const list = [manifest("00-a", [cm("one", "default"), cm("two", "default"), cm("three", "default")])];
    // The API goes away at the second apply: the run stops there (no third), and the inventory write fails too.
    const err = (await applyManifests(client, list).catch((e: Error) => e)) as Error;
    expect(err.message).toContain("error creating /v1/ConfigMap/two: ");
    expect(err.message).toContain("ECONNREFUSED");
    expect(err.message).toContain("updating inventory failed");
    expect(err.message).not.toContain("three");
    api.down = false;
    api.reject = undefined;
    await applyManifests(api.client(), list);
    expect(api.inventory()).toEqual(["default_one__ConfigMap", "default_three__ConfigMap", "default_two__ConfigMap"]);
  });

  it("merges its inventory changes with a concurrent writer's (resourceVersion conflict)", async () => {
    const api = new FakeKubernetes();
    let raced = false;
    api.beforeUpdate = (o) => {
      if (o.metadata?.name !== "talos-bootstrap-manifests-inventory" || raced) return;
      raced = true;
      const live = api.getObject("v1", "ConfigMap", "talos-bootstrap-manifests-inventory", "kube-system")!;
      api.put({ ...live, data: { ...((live.data as Record<string, string>) ?? {}), "default_other__ConfigMap": "" } } as KubeObject);
    };
    await applyManifests(api.client(), [manifest("00-a", [cm("mine", "default")])]);
    expect(raced).toBe(true);
    expect(api.inventory()).toEqual(["default_mine__ConfigMap", "default_other__ConfigMap"]);
  });

  it("moves a cluster-scoped object recorded with a namespace (Talos 1.13) out of the inventory without applying", async () => {
    const api = new FakeKubernetes();
    api.put({ apiVersion: "v1", kind: "Namespace", metadata: { name: "kube-system" } });
    api.put({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "talos-bootstrap-manifests-inventory", namespace: "kube-system" },
      data: { "kube-system_system__r_rbac.authorization.k8s.io_ClusterRole": "" },
    });
    await applyManifests(api.client(), [manifest("00-a", [{ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "system:r", namespace: "kube-system" } }])]);
    expect(api.applied()).toEqual([]);
    expect(api.inventory()).toEqual([]);
  });
});

describe("k8s.ManifestApplyController", () => {
  it("applies once etcd is healthy and the admin kubeconfig exists, publishes ManifestStatus, retries failures", async () => {
    const api = new FakeKubernetes();
    const kubeconfigs: string[] = [];
    const s = new InMemoryState();
    const rt = startRuntime(
      s,
      kubernetesManifestControllers({
        connect: (k) => {
          kubeconfigs.push(k);
          return api.client();
        },
      }),
    );
    publishConfig(s, controlPlaneConfig({ machineExtra: PRISM }));
    putRoot(s);
    await eventually(() => manifests(s).length === 10, 3000, "rendered");
    const status = () => spec<ManifestStatusSpec>(s, CONTROLPLANE_NS, ManifestStatusType.type, "manifests");

    put(s, SECRETS_NS, KubernetesCertsType.type, "k8s-certs", { localhostAdminKubeconfig: "kubeconfig-text", adminKubeconfig: "", schedulerKubeconfig: "", controllerManagerKubeconfig: "" }, "secrets.KubernetesController");
    await settle();
    expect(api.clientsOpened).toBe(0); // etcd not healthy yet

    api.down = true;
    put(s, RUNTIME_NS, ServiceType.type, "etcd", { running: true, healthy: true, unknown: false }, "v1alpha1.ServiceController");
    await eventually(() => (rt.statuses().find((c) => c.name === "k8s.ManifestApplyController")?.consecutiveFailures ?? 0) >= 2, 3000, "retries");
    expect(status()).toBeUndefined();
    api.down = false;
    await eventually(() => status() !== undefined, 5000, "applied");
    expect(status()!.manifestsApplied).toEqual(manifests(s));
    expect(kubeconfigs.every((k) => k === "kubeconfig-text")).toBe(true);
    expect(api.clientsClosed).toBe(api.clientsOpened);
    expect(api.applied()[0]).toBe("v1/Secret/kube-system/bootstrap-token-abcdef");
    expect(api.getObject("apps/v1", "DaemonSet", "kube-flannel", "kube-system")).toBeDefined();
    expect(api.inventory()).toContain("kube-system_kube-flannel_apps_DaemonSet");
    expect(api.inventory()).toContain("_system__talos-nodes_rbac.authorization.k8s.io_ClusterRoleBinding");

    // A new manifest later (an inline one) is applied on its own; the rest is skipped.
    api.calls.length = 0;
    put(s, CONTROLPLANE_NS, ManifestType.type, "99-extra", { items: [cm("late", "default")] }, "k8s.ExtraManifestController");
    await eventually(() => status()!.manifestsApplied.includes("99-extra"), 3000, "late");
    expect(api.applied()).toEqual(["v1/ConfigMap/default/late"]);
  });
});
