/**
 * The Kubernetes secrets chain with real certificates: machine config → KubernetesRootSecrets `k8s` and
 * KubeletSecrets → CertSANs `k8s` → KubernetesDynamicCerts and the kubeconfigs of KubernetesSecrets, with the
 * re-issue rules (same inputs keep the certificates, new names or CAs and the half-life renew them).
 */
import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { generateConfigs } from "../../../src/machinery/generate/index.js";
import { loadConfig, patchConfig, parsePatch } from "../../../src/machinery/config/index.js";
import { newResource } from "../../../src/machinery/resources/resource.js";
import { read, readSpec } from "../../../src/machinery/resources/read.js";
import { CONFIG_NS, MachineConfigType, MachineTypeType } from "../../../src/machinery/resources/types/config.js";
import { HostnameStatusType, NetworkStatusType, NodeAddressType } from "../../../src/machinery/resources/types/network.js";
import {
  CertSANType,
  KubeletSecretsType,
  KubernetesCertsType,
  KubernetesDynamicCertsType,
  KubernetesRootType,
} from "../../../src/machinery/resources/types/secrets.js";
import { TimeStatusType } from "../../../src/machinery/resources/types/time.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { rootKubernetesController } from "../../../src/controllers/secrets/root-kubernetes.js";
import { kubeletSecretsController } from "../../../src/controllers/secrets/kubelet.js";
import { kubernetesCertSANsController } from "../../../src/controllers/secrets/kubernetes-cert-sans.js";
import { kubernetesDynamicCertsController } from "../../../src/controllers/secrets/kubernetes-dynamic-certs.js";
import { kubernetesCertsController } from "../../../src/controllers/secrets/kubernetes-certs.js";
import { eventually, put, settle, startRuntime } from "../runtime/harness.js";

const gen = generateConfigs({ clusterName: "demo", endpoint: "https://k8s.example.org:6443", talosVersion: "v1.13" });

async function configText(kind: "controlplane" | "worker", patch = ""): Promise<string> {
  const cfgs = await gen;
  const base = kind === "controlplane" ? cfgs.controlplane : cfgs.worker;
  return patch ? new TextDecoder().decode(patchConfig(loadConfig(base), [parsePatch(patch)]).encode()) : base;
}

function publish(s: InMemoryState, text: string): void {
  const cfg = loadConfig(text);
  s.apply(newResource({ namespace: CONFIG_NS, type: MachineConfigType.type, id: "v1alpha1" }, cfg), "");
  s.apply(newResource({ namespace: CONFIG_NS, type: MachineTypeType.type, id: "machine-type" }, cfg.machineType()), "config.MachineTypeController");
}

function network(s: InMemoryState, addrs = ["10.5.0.2/24"], ready = true): void {
  put(s, "network", HostnameStatusType.type, "hostname", { hostname: "cp1", domainname: "example.org" }, "network.HostnameSpecController");
  put(s, "network", NodeAddressType.type, "accumulative-no-k8s", { addresses: addrs, sortAlgorithm: "v1" }, "network.NodeAddressController");
  put(s, "network", NetworkStatusType.type, "status", { addressReady: ready, connectivityReady: ready, hostnameReady: ready, etcFilesReady: ready }, "network.StatusController");
}

const timeSynced = (s: InMemoryState, synced = true) =>
  put(s, "runtime", TimeStatusType.type, "node", { synced, epoch: 0, syncDisabled: true }, "time.SyncController");

const controllers = (validityMs?: number) => [
  rootKubernetesController(),
  kubeletSecretsController(),
  kubernetesCertSANsController(),
  kubernetesDynamicCertsController({ validityMs }),
  kubernetesCertsController({ validityMs }),
];

const ekus = (c: X509Certificate) => c.keyUsage ?? [];
const SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";

describe("secrets.RootKubernetesController and secrets.KubeletController", () => {
  it("a control plane with KubePrism: local endpoint 127.0.0.1:7445, service IPs, CAs, token, aggregator and service account", async () => {
    const s = new InMemoryState();
    startRuntime(s, controllers());
    const cfgs = await gen;
    publish(s, await configText("controlplane", "cluster:\n  network:\n    serviceSubnets: [10.96.0.0/12, fd00:10:96::/112]\n  apiServer:\n    certSANs: [api.example.org, 192.0.2.10]\n"));
    await eventually(() => readSpec(s, KubernetesRootType, "k8s") !== undefined && readSpec(s, KubeletSecretsType, "kubelet") !== undefined, 5000, "roots");
    const root = readSpec(s, KubernetesRootType, "k8s")!;
    const b = cfgs.secrets;
    expect(root).toEqual({
      name: "demo",
      endpoint: "https://k8s.example.org:6443",
      localEndpoint: "https://127.0.0.1:7445",
      certSANs: ["api.example.org", "192.0.2.10"],
      dnsDomain: "cluster.local",
      issuingCA: { crt: b.certs.k8s.crt, key: b.certs.k8s.key },
      acceptedCAs: [{ crt: b.certs.k8s.crt }],
      serviceAccount: { key: b.certs.k8sServiceAccount.key },
      aggregatorCA: { crt: b.certs.k8sAggregator.crt, key: b.certs.k8sAggregator.key },
      aescbcEncryptionSecret: "",
      secretboxEncryptionSecret: b.secrets.secretboxEncryptionSecret,
      bootstrapTokenID: b.secrets.bootstrapToken.split(".")[0],
      bootstrapTokenSecret: b.secrets.bootstrapToken.split(".")[1],
      apiServerIPs: ["10.96.0.1", "fd00:10:96::1"],
    });
    expect(readSpec(s, KubeletSecretsType, "kubelet")).toEqual({
      endpoint: "https://127.0.0.1:7445",
      bootstrapTokenID: root.bootstrapTokenID,
      bootstrapTokenSecret: root.bootstrapTokenSecret,
      acceptedCAs: [{ crt: b.certs.k8s.crt }],
    });
  });

  it("without KubePrism: localhost:<local API server port> on a control plane, the cluster endpoint on a worker", async () => {
    const s = new InMemoryState();
    startRuntime(s, controllers());
    const noPrism = "machine:\n  features:\n    kubePrism:\n      enabled: false\n";
    publish(s, await configText("controlplane", `${noPrism}cluster:\n  controlPlane:\n    localAPIServerPort: 7443\n`));
    await eventually(() => readSpec(s, KubernetesRootType, "k8s")?.localEndpoint === "https://localhost:7443", 5000, "local endpoint");
    expect(readSpec(s, KubeletSecretsType, "kubelet")?.endpoint).toBe("https://localhost:7443");

    const other = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    const acceptedCA = Buffer.from(other).toString("base64");
    publish(s, await configText("worker", `${noPrism}cluster:\n  acceptedCAs:\n    - crt: ${acceptedCA}\n`));
    await eventually(() => readSpec(s, KubeletSecretsType, "kubelet")?.endpoint === "https://k8s.example.org:6443", 5000, "worker endpoint");
    // cluster.ca (certificate only on a worker) first, then the accepted CAs.
    expect(readSpec(s, KubeletSecretsType, "kubelet")!.acceptedCAs.map((c) => c.crt)).toEqual([(await gen).secrets.certs.k8s.crt, other]);
    // Workers have no Kubernetes root.
    await eventually(() => readSpec(s, KubernetesRootType, "k8s") === undefined, 5000, "root gone");
  });

  it("names what is missing or wrong in the config", async () => {
    const s = new InMemoryState();
    const rt = startRuntime(s, controllers());
    const failure = async (want: string) =>
      eventually(() => rt.status("secrets.RootKubernetesController")?.lastError === want, 5000, want);
    const cp = loadConfig(await configText("controlplane"));
    const without = (mutate: (c: Record<string, any>) => void) =>
      new TextDecoder().decode(cp.withV1Alpha1((v) => void mutate(v as unknown as Record<string, any>)).encode());
    publish(s, without((v) => delete v.cluster.aggregatorCA));
    await failure("missing cluster.aggregatorCA secret");
    publish(s, without((v) => delete v.cluster.ca));
    await failure("missing cluster.CA secret");
    publish(s, without((v) => (v.cluster.network.serviceSubnets = ["10.96.0.0/33"])));
    await failure('error building API service IPs: failed to process Service CIDRs: invalid CIDR "10.96.0.0/33"');
    // A token that is not `<id>.<secret>` gives empty parts, as upstream.
    publish(s, without((v) => (v.cluster.token = "not-a-token")));
    await eventually(() => readSpec(s, KubernetesRootType, "k8s")?.bootstrapTokenID === "", 5000, "empty token");
    expect(readSpec(s, KubernetesRootType, "k8s")!.bootstrapTokenSecret).toBe("");
  });
});

describe("secrets.KubernetesCertSANsController", () => {
  it("the endpoint host, cert SANs, kubernetes.* names, hostname, FQDN, service IPs, node addresses and 127.0.0.1", async () => {
    const s = new InMemoryState();
    startRuntime(s, controllers());
    publish(s, await configText("controlplane", "cluster:\n  apiServer:\n    certSANs: [api.example.org, 192.0.2.10, trailing.dot.]\n  network:\n    dnsDomain: corp.local\n"));
    await settle();
    expect(readSpec(s, CertSANType, "k8s")).toBeUndefined(); // waits for the hostname and addresses
    network(s, ["10.5.0.2/24", "fd00::2/64"]);
    await eventually(() => readSpec(s, CertSANType, "k8s") !== undefined, 5000, "sans");
    expect(readSpec(s, CertSANType, "k8s")).toEqual({
      ips: ["10.5.0.2", "10.96.0.1", "127.0.0.1", "192.0.2.10", "fd00::2"],
      dnsNames: [
        "api.example.org",
        "cp1",
        "cp1.example.org",
        "k8s.example.org",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.corp.local",
        "localhost",
        "trailing.dot",
      ],
      fqdn: "",
    });
  });
});

describe("secrets.KubernetesDynamicCertsController and secrets.KubernetesController", () => {
  it("issue the API server, kubelet client and front proxy certificates and four kubeconfigs from the cluster CAs", async () => {
    const s = new InMemoryState();
    startRuntime(s, controllers());
    const b = (await gen).secrets;
    publish(s, await configText("controlplane"));
    network(s, ["10.5.0.2/24"], false);
    timeSynced(s, false);
    await settle();
    // Neither before the network was ready, nor before the clock is synced.
    expect(readSpec(s, KubernetesDynamicCertsType, "k8s-dynamic-certs")).toBeUndefined();
    expect(readSpec(s, KubernetesCertsType, "k8s-certs")).toBeUndefined();
    network(s, ["10.5.0.2/24"], true);
    timeSynced(s);
    await eventually(() => readSpec(s, KubernetesDynamicCertsType, "k8s-dynamic-certs") !== undefined && readSpec(s, KubernetesCertsType, "k8s-certs") !== undefined, 10_000, "certs");

    const ca = new X509Certificate(b.certs.k8s.crt);
    const agg = new X509Certificate(b.certs.k8sAggregator.crt);
    const d = readSpec(s, KubernetesDynamicCertsType, "k8s-dynamic-certs")!;
    const api = new X509Certificate(d.apiServer.crt);
    expect(api.subject).toBe("O=kube-master\nCN=kube-apiserver");
    expect(api.subjectAltName).toBe(
      "DNS:cp1, DNS:cp1.example.org, DNS:k8s.example.org, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, " +
        "DNS:kubernetes.default.svc.cluster.local, DNS:localhost, IP Address:10.5.0.2, IP Address:10.96.0.1, IP Address:127.0.0.1",
    );
    expect(ekus(api)).toEqual([SERVER_AUTH]);
    expect(api.verify(ca.publicKey)).toBe(true);
    const year = (c: X509Certificate) => (Date.parse(c.validTo) - Date.parse(c.validFrom)) / 86_400_000;
    expect(Math.round(year(api))).toBe(365);
    const kc = new X509Certificate(d.apiServerKubeletClient.crt);
    expect(kc.subject).toBe("O=system:masters\nCN=apiserver-kubelet-client");
    expect(ekus(kc)).toEqual([CLIENT_AUTH]);
    expect(kc.verify(ca.publicKey)).toBe(true);
    const fp = new X509Certificate(d.frontProxy.crt);
    expect(fp.subject).toBe("CN=front-proxy-client");
    expect(fp.verify(agg.publicKey)).toBe(true);
    expect(fp.verify(ca.publicKey)).toBe(false);

    const k = readSpec(s, KubernetesCertsType, "k8s-certs")!;
    const check = (text: string, want: { server: string; user: string; context: string; subject: string; cas: number }) => {
      const doc = parse(text);
      expect(doc.clusters[0]).toMatchObject({ name: "demo", cluster: { server: want.server } });
      expect(doc["current-context"]).toBe(want.context);
      expect(doc.contexts[0]).toEqual({ name: want.context, context: { cluster: "demo", namespace: "default", user: want.user } });
      const caData = Buffer.from(doc.clusters[0].cluster["certificate-authority-data"], "base64").toString();
      expect(caData).toBe(b.certs.k8s.crt.repeat(want.cas));
      const cert = new X509Certificate(Buffer.from(doc.users[0].user["client-certificate-data"], "base64"));
      expect(doc.users[0].name).toBe(want.user);
      expect(cert.subject).toBe(want.subject);
      expect(ekus(cert)).toEqual([CLIENT_AUTH]);
      expect(cert.verify(ca.publicKey)).toBe(true);
    };
    check(k.controllerManagerKubeconfig, {
      server: "https://127.0.0.1:7445",
      user: "system:kube-controller-manager@demo",
      context: "default@demo",
      subject: "O=system:kube-controller-manager\nCN=system:kube-controller-manager",
      cas: 1,
    });
    check(k.schedulerKubeconfig, {
      server: "https://127.0.0.1:7445",
      user: "system:kube-scheduler@demo",
      context: "default@demo",
      subject: "O=system:kube-scheduler\nCN=system:kube-scheduler",
      cas: 1,
    });
    // The admin kubeconfigs trust the issuing CA a second time, as upstream's GenerateAdmin appends it again.
    check(k.adminKubeconfig, { server: "https://k8s.example.org:6443", user: "admin@demo", context: "admin@demo", subject: "O=system:masters\nCN=talos:admin", cas: 2 });
    check(k.localhostAdminKubeconfig, { server: "https://127.0.0.1:7445", user: "admin@demo", context: "admin@demo", subject: "O=system:masters\nCN=talos:admin", cas: 2 });
  });

  it("keep the certificates while the inputs stay, and re-issue them on new names", async () => {
    const s = new InMemoryState();
    startRuntime(s, controllers());
    publish(s, await configText("controlplane"));
    network(s, ["10.5.0.2/24"]);
    timeSynced(s);
    const serial = () => new X509Certificate(readSpec(s, KubernetesDynamicCertsType, "k8s-dynamic-certs")!.apiServer.crt).serialNumber;
    await eventually(() => readSpec(s, KubernetesDynamicCertsType, "k8s-dynamic-certs") !== undefined && read(s, KubernetesCertsType, "k8s-certs") !== undefined, 10_000, "certs");
    const first = serial();
    const firstKubeconfigs = read(s, KubernetesCertsType, "k8s-certs")!.metadata.version;
    // Events that change nothing the certificates are made of (another config field, the clock resynced).
    publish(s, await configText("controlplane", "machine:\n  sysctls:\n    vm.max_map_count: \"262144\"\n"));
    timeSynced(s);
    await settle();
    expect(serial()).toBe(first);
    expect(read(s, KubernetesCertsType, "k8s-certs")!.metadata.version).toBe(firstKubeconfigs);

    network(s, ["10.5.0.2/24", "10.5.0.3/24"]);
    await eventually(() => serial() !== first, 10_000, "re-issued for the new address");
    expect(new X509Certificate(readSpec(s, KubernetesDynamicCertsType, "k8s-dynamic-certs")!.apiServer.crt).subjectAltName).toContain("IP Address:10.5.0.3");
    // The kubeconfigs do not carry node names.
    expect(read(s, KubernetesCertsType, "k8s-certs")!.metadata.version).toBe(firstKubeconfigs);
  });

  it("renew at half of the validity without any input event", async () => {
    const s = new InMemoryState();
    startRuntime(s, controllers(3000));
    publish(s, await configText("controlplane"));
    network(s, ["10.5.0.2/24"]);
    timeSynced(s);
    await eventually(() => readSpec(s, KubernetesDynamicCertsType, "k8s-dynamic-certs") !== undefined && read(s, KubernetesCertsType, "k8s-certs") !== undefined, 10_000, "certs");
    const dynamic = read(s, KubernetesDynamicCertsType, "k8s-dynamic-certs")!.metadata.version;
    const kubeconfigs = read(s, KubernetesCertsType, "k8s-certs")!.metadata.version;
    await eventually(
      () => read(s, KubernetesDynamicCertsType, "k8s-dynamic-certs")!.metadata.version > dynamic && read(s, KubernetesCertsType, "k8s-certs")!.metadata.version > kubeconfigs,
      10_000,
      "renewed",
    );
  });
});
