import { X509Certificate } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import {
  DEFAULT_INSTALLER_IMAGE, DEFAULT_KUBERNETES_VERSION, generateConfigs, validateEndpoint, buildTalosconfig,
  type GeneratedConfigs,
} from "../../../src/machinery/generate/index.js";
import {
  certOrganizations, extKeyUsage, fromBase64Pem, loadSecrets, parsePrivateKeyPem, secretsFromConfig, verifyChain,
} from "../../../src/machinery/pki/index.js";
import { loadConfig, validateConfig } from "../../../src/machinery/config/index.js";
import { fixture, hasFixtures } from "../pki/helpers.js";

type Doc = Record<string, any>;

const docsOf = (text: string): Doc[] => parseAllDocuments(text).map((d) => d.toJS() as Doc);
const byKind = (docs: Doc[], kind: string) => docs.filter((d) => d.kind === kind);
const one = (docs: Doc[], kind: string) => {
  const found = byKind(docs, kind);
  expect(found, kind).toHaveLength(1);
  return found[0];
};

// The upstream bundle, where the fixtures exist; the suites that use it are skipped otherwise (the helper says why).
const fixtureSecrets = hasFixtures ? loadSecrets(fixture("configs", "secrets.yaml")) : (undefined as never);

let current: GeneratedConfigs;
let legacy: GeneratedConfigs;

beforeAll(async () => {
  [current, legacy] = await Promise.all([
    generateConfigs({ clusterName: "demo", endpoint: "https://198.51.100.11:6443", additionalSans: ["10.0.0.10", "api.demo"] }),
    hasFixtures
      ? generateConfigs({ clusterName: "demo", endpoint: "https://198.51.100.11:6443", talosVersion: "v1.13", secrets: fixtureSecrets })
      : (undefined as never),
  ]);
});

const CP_KINDS_1_14 = [
  undefined, "DiscoveryServiceConfig", "DiscoveryIdentityConfig", "UnattendedInstallConfig", "ResolverConfig",
  "VolumeConfig", "FilesystemTrimConfig", "SecurityProfileConfig", "HostnameConfig", "KubeClusterConfig",
  "KubeNodeConfig", "KubeletConfig", "KubeNetworkConfig", "KubeAPIServerCAConfig", "KubePrismConfig",
  "KubeAggregatorCAConfig", "KubeAdmissionControlConfig", "KubeAuditPolicyConfig", "KubeAuthenticationConfig",
  "KubeAuthorizerConfig", "KubeAuthorizerConfig", "KubeEtcdEncryptionConfig", "KubeServiceAccountConfig",
  "KubeAPIServerConfig", "KubeControllerManagerConfig", "KubeSchedulerConfig", "KubeProxyConfig",
  "KubeFlannelCNIConfig", "KubeCoreDNSConfig",
];

describe("gen config for Talos 1.14 (current)", () => {
  it("writes the documents upstream writes, in upstream's order", () => {
    expect(docsOf(current.controlplane).map((d) => d.kind)).toEqual(CP_KINDS_1_14);
    expect(docsOf(current.worker).map((d) => d.kind)).toEqual(CP_KINDS_1_14.slice(0, 15));
  });

  it("keeps machine identity, bootstrap token and etcd CA in the v1alpha1 document", () => {
    const s = current.secrets;
    const [cp] = docsOf(current.controlplane);
    expect(cp.version).toBe("v1alpha1");
    expect(cp.debug).toBe(false);
    expect(cp.persist).toBe(true);
    expect(cp.machine).toEqual({
      type: "controlplane",
      token: s.trustdInfo.token,
      ca: { crt: Buffer.from(s.certs.os.crt).toString("base64"), key: Buffer.from(s.certs.os.key).toString("base64") },
      certSANs: ["10.0.0.10", "api.demo"],
      features: { diskQuotaSupport: true },
    });
    expect(Object.keys(cp.cluster)).toEqual(["token", "etcd"]);
    expect(cp.cluster.token).toBe(s.secrets.bootstrapToken);
    expect(fromBase64Pem(cp.cluster.etcd.ca.key)).toBe(s.certs.etcd.key);
  });

  it("gives workers the OS CA certificate with an empty key and no etcd", () => {
    const [w] = docsOf(current.worker);
    expect(w.machine.type).toBe("worker");
    expect(fromBase64Pem(w.machine.ca.crt)).toBe(current.secrets.certs.os.crt);
    expect(w.machine.ca.key).toBe("");
    expect(w.cluster).toEqual({ token: current.secrets.secrets.bootstrapToken });
    expect(one(docsOf(current.worker), "KubeAPIServerCAConfig")).toEqual({
      apiVersion: "v1alpha1",
      kind: "KubeAPIServerCAConfig",
      acceptedCAs: [current.secrets.certs.k8s.crt],
    });
    expect(one(docsOf(current.worker), "KubeNodeConfig")).toEqual({ apiVersion: "v1alpha1", kind: "KubeNodeConfig", nodeIP: {} });
  });

  it("fills the Kubernetes documents from the options and the bundle", () => {
    const docs = docsOf(current.controlplane);
    const v = DEFAULT_KUBERNETES_VERSION;
    expect(one(docs, "KubeClusterConfig")).toMatchObject({ clusterName: "demo", endpoint: "https://198.51.100.11:6443" });
    expect(one(docs, "KubeletConfig")).toMatchObject({ image: `ghcr.io/siderolabs/kubelet:v${v}`, defaultRuntimeSeccompProfileEnabled: true });
    expect(one(docs, "KubeNetworkConfig")).toMatchObject({ dnsDomain: "cluster.local", podSubnets: ["10.244.0.0/16"], serviceSubnets: ["10.96.0.0/12"] });
    expect(one(docs, "KubeNodeConfig")).toMatchObject({
      labels: { "node-role.kubernetes.io/control-plane": "", "node.kubernetes.io/exclude-from-external-load-balancers": "" },
      taints: { "node-role.kubernetes.io/control-plane": "NoSchedule" },
    });
    expect(one(docs, "KubeAPIServerConfig")).toMatchObject({ image: `registry.k8s.io/kube-apiserver:v${v}`, certExtraSANs: ["10.0.0.10", "api.demo"] });
    expect(one(docs, "KubeAPIServerCAConfig").issuingCA).toEqual({ cert: current.secrets.certs.k8s.crt, key: current.secrets.certs.k8s.key });
    expect(one(docs, "KubeServiceAccountConfig").issuer).toEqual({
      privateKey: current.secrets.certs.k8sServiceAccount.key,
      issuerURL: "https://198.51.100.11:6443",
    });
    expect(current.secrets.certs.k8sServiceAccount.key).toMatch(/^-----BEGIN RSA PRIVATE KEY-----/);
    expect(one(docs, "KubeEtcdEncryptionConfig").config.resources[0].providers[0].secretbox.keys[0]).toEqual({
      name: "key2",
      secret: current.secrets.secrets.secretboxEncryptionSecret,
    });
    expect(one(docs, "UnattendedInstallConfig")).toMatchObject({
      installer: { image: DEFAULT_INSTALLER_IMAGE },
      provisioning: { diskSelector: { match: 'disk.dev_path == "/dev/sda"' }, wipe: false },
    });
    expect(one(docs, "DiscoveryIdentityConfig")).toMatchObject({ clusterID: current.secrets.cluster.id, clusterSecret: current.secrets.cluster.secret });
  });

  it("their CA material is consistent: every certificate verifies and every key matches", () => {
    const docs = docsOf(current.controlplane);
    const pairs = [
      one(docs, "KubeAPIServerCAConfig").issuingCA,
      one(docs, "KubeAggregatorCAConfig").issuingCA,
      { cert: fromBase64Pem(docs[0].machine.ca.crt), key: fromBase64Pem(docs[0].machine.ca.key) },
      { cert: fromBase64Pem(docs[0].cluster.etcd.ca.crt), key: fromBase64Pem(docs[0].cluster.etcd.ca.key) },
    ];
    for (const p of pairs) {
      expect(verifyChain(p.cert, p.cert)).toBe(true);
      expect(new X509Certificate(p.cert).checkPrivateKey(parsePrivateKeyPem(p.key))).toBe(true);
    }
  });

  it("writes a talosconfig talosctl accepts: os:admin Ed25519 client certificate chained to the OS CA", () => {
    const tc = parse(current.talosconfig);
    expect(tc.context).toBe("demo");
    expect(Object.keys(tc.contexts)).toEqual(["demo"]);
    const ctx = tc.contexts.demo;
    expect(Object.keys(ctx)).toEqual(["endpoints", "ca", "crt", "key"]);
    expect(ctx.endpoints).toEqual([]);
    const ca = fromBase64Pem(ctx.ca);
    const crt = fromBase64Pem(ctx.crt);
    const key = fromBase64Pem(ctx.key);
    expect(ca).toBe(current.secrets.certs.os.crt);
    expect(verifyChain(crt, ca)).toBe(true);
    expect(certOrganizations(crt)).toEqual(["os:admin"]);
    expect(extKeyUsage(crt)).toEqual(["clientAuth"]);
    expect(key).toMatch(/^-----BEGIN ED25519 PRIVATE KEY-----/);
    expect(new X509Certificate(crt).checkPrivateKey(parsePrivateKeyPem(key))).toBe(true);
  });

  it("the project's config loader accepts and validates both machine configs", () => {
    for (const text of [current.controlplane, current.worker]) {
      const cfg = loadConfig(text);
      expect(cfg.warnings).toEqual([]);
      expect(() => validateConfig(cfg, { mode: "metal" } as never)).not.toThrow();
    }
  });

  it("secretsFromConfig recovers the bundle from the control-plane config", () => {
    expect(secretsFromConfig(current.controlplane)).toEqual(current.secrets);
  });

  it("secretsFromConfig refuses a worker config, naming what is missing", () => {
    expect(() => secretsFromConfig(current.worker)).toThrow(/certs\.etcd is required \(is this a control-plane config\?\)/);
  });
});

describe.skipIf(!hasFixtures)("gen config for an older contract (--talos-version v1.13)", () => {
  it("puts kubelet, install, features and the Kubernetes sections into v1alpha1", () => {
    const docs = docsOf(legacy.controlplane);
    expect(docs.map((d) => d.kind)).toEqual([undefined, "HostnameConfig"]);
    const [cp] = docs;
    expect(cp.machine.kubelet).toEqual({
      image: `ghcr.io/siderolabs/kubelet:v${DEFAULT_KUBERNETES_VERSION}`,
      defaultRuntimeSeccompProfileEnabled: true,
      disableManifestsDirectory: true,
    });
    expect(cp.machine.install).toEqual({ disk: "/dev/sda", image: DEFAULT_INSTALLER_IMAGE, wipe: false, grubUseUKICmdline: true });
    expect(cp.machine.nodeLabels).toEqual({ "node.kubernetes.io/exclude-from-external-load-balancers": "" });
    expect(cp.machine.features.hostDNS).toEqual({ enabled: true, forwardKubeDNSToHost: true });
    expect(Object.keys(cp.cluster)).toEqual([
      "id", "secret", "controlPlane", "clusterName", "network", "token", "secretboxEncryptionSecret", "ca",
      "aggregatorCA", "serviceAccount", "apiServer", "controllerManager", "proxy", "scheduler", "discovery", "etcd",
    ]);
    expect(cp.cluster.apiServer.admissionControl[0].name).toBe("PodSecurity");
    expect(cp.cluster.secretboxEncryptionSecret).toBe(fixtureSecrets.secrets.secretboxEncryptionSecret);
    const [w] = docsOf(legacy.worker);
    expect(w.cluster.ca.key).toBe("");
    expect(w.cluster.clusterName).toBe("demo");
    expect(w.cluster.etcd).toBeUndefined();
  });

  it("secretsFromConfig round trips the legacy layout too (gen config --with-secrets)", () => {
    expect(secretsFromConfig(legacy.controlplane)).toEqual(fixtureSecrets);
  });

  it("the project's config loader reads cluster name and endpoint from it", () => {
    const cfg = loadConfig(legacy.controlplane);
    expect(cfg.clusterName()).toBe("demo");
    expect(cfg.endpoint()).toBe("https://198.51.100.11:6443");
  });
});

describe.skipIf(!hasFixtures)("gen config options", () => {
  it("reuses a given secrets bundle and honours install, DNS, KubeSpan and scheduling options", async () => {
    const out = await generateConfigs({
      clusterName: "c2",
      endpoint: "https://c2.example.org:6443",
      secrets: fixtureSecrets,
      installDisk: "/dev/vda",
      installImage: "example.org/installer:v1",
      dnsDomain: "example.com",
      kubernetesVersion: "v1.31.4",
      kubeSpan: true,
      allowSchedulingOnControlPlanes: true,
      endpoints: ["10.0.0.1"],
    });
    const docs = docsOf(out.controlplane);
    expect(out.secrets).toBe(fixtureSecrets);
    expect(one(docs, "UnattendedInstallConfig")).toMatchObject({
      installer: { image: "example.org/installer:v1" },
      provisioning: { diskSelector: { match: 'disk.dev_path == "/dev/vda"' } },
    });
    expect(one(docs, "KubeNetworkConfig").dnsDomain).toBe("example.com");
    expect(one(docs, "KubeletConfig").image).toBe("ghcr.io/siderolabs/kubelet:v1.31.4");
    expect(one(docs, "KubeSpanConfig").enabled).toBe(true);
    expect(one(docs, "KubeNodeConfig").taints).toBeUndefined();
    expect(parse(out.talosconfig).contexts.c2.endpoints).toEqual(["10.0.0.1"]);
  });

  it("leaves the install document out without an install disk, and discovery out when disabled", async () => {
    const out = await generateConfigs({
      clusterName: "c3", endpoint: "https://c3:6443", secrets: fixtureSecrets, installDisk: "", discovery: false,
    });
    const kinds = docsOf(out.worker).map((d) => d.kind);
    expect(kinds).not.toContain("UnattendedInstallConfig");
    expect(kinds).not.toContain("DiscoveryServiceConfig");
    expect(kinds).toContain("DiscoveryIdentityConfig");
  });

  it("refuses endpoints talosctl refuses, with its hints", () => {
    expect(() => validateEndpoint("10.0.0.1:6443")).toThrow('no scheme specified for the cluster endpoint URL\ntry: "https://10.0.0.1:6443"');
    expect(() => validateEndpoint("10.0.0.1")).toThrow('no scheme and port specified for the cluster endpoint URL\ntry: "https://10.0.0.1:6443"');
    expect(() => validateEndpoint("http://10.0.0.1:6443")).toThrow("should have scheme https://");
    expect(validateEndpoint("https://[fd00::1]:6443").hostname).toBe("[fd00::1]");
  });

  it("rejects an unparseable --talos-version", async () => {
    await expect(generateConfigs({ clusterName: "x", endpoint: "https://x:6443", secrets: fixtureSecrets, talosVersion: "latest" })).rejects.toThrow(
      'error parsing version "latest"',
    );
  });

  it("buildTalosconfig writes nodes only when given", () => {
    const base = { contextName: "os:reader@demo", caPem: "CA", crtPem: "CRT", keyPem: "KEY" };
    expect(Object.keys(parse(buildTalosconfig(base)).contexts["os:reader@demo"])).toEqual(["endpoints", "ca", "crt", "key"]);
    const withNodes = parse(buildTalosconfig({ ...base, endpoints: ["a"], nodes: ["n1"] })).contexts["os:reader@demo"];
    expect(withNodes.nodes).toEqual(["n1"]);
    expect(Buffer.from(withNodes.key, "base64").toString()).toBe("KEY");
  });
});
