/**
 * The secrets chain with real certificates: machine config → OSRoot/EtcdRoot → CertSANs (api) → ApiCertificates,
 * EtcdSecrets; and the etcd chain → EtcdConfig → EtcdSpec (short hostname, routed address, subnet filters).
 */
import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { generateConfigs } from "../../../src/machinery/generate/index.js";
import { patchConfig, parsePatch, loadConfig } from "../../../src/machinery/config/index.js";
import { newResource } from "../../../src/machinery/resources/resource.js";
import { readSpec, read } from "../../../src/machinery/resources/read.js";
import { CONFIG_NS, MachineConfigType, MachineTypeType } from "../../../src/machinery/resources/types/config.js";
import { HostnameStatusType, NodeAddressType } from "../../../src/machinery/resources/types/network.js";
import { APICertsType, CertSANType, EtcdCertsType, EtcdRootType, OSRootType } from "../../../src/machinery/resources/types/secrets.js";
import { EtcdConfigType, EtcdSpecType } from "../../../src/machinery/resources/types/etcd.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { rootOSController } from "../../../src/controllers/secrets/root-os.js";
import { rootEtcdController } from "../../../src/controllers/secrets/root-etcd.js";
import { apiCertSANsController } from "../../../src/controllers/secrets/api-cert-sans.js";
import { apiCertsController } from "../../../src/controllers/secrets/api-certs.js";
import { etcdCertsController } from "../../../src/controllers/secrets/etcd-certs.js";
import { etcdConfigController } from "../../../src/controllers/etcd/config.js";
import { etcdSpecController, filterIPs } from "../../../src/controllers/etcd/spec.js";
import { eventually, put, settle, startRuntime } from "../runtime/harness.js";

const gen = generateConfigs({ clusterName: "demo", endpoint: "https://10.5.0.2:6443", talosVersion: "v1.13" });

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

function network(s: InMemoryState, hostname = "n1", domainname = "example.org", addrs = ["10.5.0.2/24", "192.168.9.4/24"]): void {
  put(s, "network", HostnameStatusType.type, "hostname", { hostname, domainname }, "network.HostnameSpecController");
  for (const id of ["accumulative-no-k8s", "routed-no-k8s", "current-no-k8s"]) {
    put(s, "network", NodeAddressType.type, id, { addresses: addrs, sortAlgorithm: "v1" }, "network.NodeAddressController");
  }
}

const controllers = () => [
  rootOSController(),
  rootEtcdController(),
  apiCertSANsController(),
  apiCertsController(),
  etcdCertsController(),
  etcdConfigController(),
  etcdSpecController(),
];

describe("secrets and etcd spec controllers", () => {
  it("a control plane named n1.example.org: API certificate for n1, n1.example.org and every address; etcd as n1", async () => {
    const s = new InMemoryState();
    startRuntime(s, controllers());
    publish(s, await configText("controlplane", "machine:\n  certSANs: [api.example.org, 10.9.9.9]\n"));
    network(s);
    await eventually(() => readSpec(s, APICertsType, "api") !== undefined && readSpec(s, EtcdSpecType, "etcd") !== undefined, 10_000);

    const root = readSpec(s, OSRootType, "os")!;
    expect(root.issuingCA?.key).toContain("PRIVATE KEY");
    expect(root.certSANIPs).toEqual(["10.9.9.9"]);
    expect(root.certSANDNSNames).toEqual(["api.example.org"]);

    expect(readSpec(s, CertSANType, "api")).toEqual({
      ips: ["10.5.0.2", "10.9.9.9", "127.0.0.1", "192.168.9.4"],
      dnsNames: ["api.example.org", "n1", "n1.example.org"],
      fqdn: "n1.example.org",
    });
    const api = readSpec(s, APICertsType, "api")!;
    const server = new X509Certificate(api.server.crt);
    expect(server.subject).toBe("CN=n1.example.org");
    expect(server.subjectAltName).toBe("DNS:api.example.org, DNS:n1, DNS:n1.example.org, IP Address:10.5.0.2, IP Address:10.9.9.9, IP Address:127.0.0.1, IP Address:192.168.9.4");
    expect(server.verify(new X509Certificate(root.issuingCA!.crt).publicKey)).toBe(true);
    const client = new X509Certificate(api.client!.crt);
    expect(client.subject).toBe("O=os:impersonator\nCN=n1.example.org"); // Go RDN order: O before CN

    const etcd = readSpec(s, EtcdSpecType, "etcd")!;
    expect(etcd).toMatchObject({ name: "n1", advertisedAddresses: ["10.5.0.2"], listenPeerAddresses: ["0.0.0.0"], listenClientAddresses: ["0.0.0.0"] });
    expect(etcd.image).toBe("registry.k8s.io/etcd:v3.7.3");
    const etcdServer = new X509Certificate(readSpec(s, EtcdCertsType, "etcd")!.etcd.crt);
    expect(etcdServer.subject).toBe("CN=n1");
    expect(etcdServer.subjectAltName).toContain("DNS:n1.example.org");
    expect(etcdServer.subjectAltName).toContain("IP Address:127.0.0.1");
  });

  it("issues again only when the names change, not on unrelated events", async () => {
    const s = new InMemoryState();
    startRuntime(s, controllers());
    publish(s, await configText("controlplane"));
    network(s);
    await eventually(() => readSpec(s, APICertsType, "api") !== undefined, 10_000);
    const v1 = read(s, APICertsType, "api")!.metadata.version;
    // A new address the certificate already covers... a re-published NodeAddress with the same content is a no-op,
    // so poke an input with a real but irrelevant change: the current (non-accumulative) view.
    put(s, "network", NodeAddressType.type, "current-no-k8s", { addresses: ["10.5.0.2/24"], sortAlgorithm: "v1" }, "network.NodeAddressController");
    await settle();
    expect(read(s, APICertsType, "api")!.metadata.version).toBe(v1);
    network(s, "n2");
    await eventually(() => new X509Certificate(readSpec(s, APICertsType, "api")!.server.crt).subject === "CN=n2.example.org", 10_000);
    expect(readSpec(s, EtcdSpecType, "etcd")!.name).toBe("n2");
  });

  it("a worker has the OS root without its key, no API certificate of its own, no etcd", async () => {
    const s = new InMemoryState();
    startRuntime(s, controllers());
    publish(s, await configText("worker"));
    network(s);
    await eventually(() => readSpec(s, CertSANType, "api") !== undefined, 10_000);
    await settle();
    expect(readSpec(s, OSRootType, "os")!.issuingCA).toBeUndefined();
    expect(readSpec(s, APICertsType, "api")).toBeUndefined();
    expect(readSpec(s, EtcdRootType, "etcd")).toBeUndefined();
    expect(readSpec(s, EtcdConfigType, "etcd")).toBeUndefined();
    expect(readSpec(s, EtcdSpecType, "etcd")).toBeUndefined();
  });

  it("advertisedSubnets and listenSubnets pick addresses, with ! exclusions", async () => {
    const s = new InMemoryState();
    startRuntime(s, controllers());
    publish(s, await configText("controlplane", "cluster:\n  etcd:\n    advertisedSubnets: [192.168.0.0/16]\n    listenSubnets: ['10.0.0.0/8', '!10.5.0.3/32']\n"));
    network(s, "n1", "", ["10.5.0.2/24", "10.5.0.3/24", "192.168.9.4/24"]);
    await eventually(() => readSpec(s, EtcdSpecType, "etcd") !== undefined, 10_000);
    expect(readSpec(s, EtcdSpecType, "etcd")).toMatchObject({
      advertisedAddresses: ["192.168.9.4"],
      listenPeerAddresses: ["10.5.0.2"],
      listenClientAddresses: ["127.0.0.1", "10.5.0.2"],
    });
    expect(readSpec(s, EtcdConfigType, "etcd")).toMatchObject({ advertiseValidSubnets: ["192.168.0.0/16"], listenValidSubnets: ["10.0.0.0/8"], listenExcludeSubnets: ["10.5.0.3/32"] });
  });

  it("filterIPs: positive and negative subnets, bare addresses, families kept apart", () => {
    expect(filterIPs(["10.0.0.1", "fd00::1", "192.168.1.1"], ["0.0.0.0/0", "::/0"])).toEqual(["10.0.0.1", "fd00::1", "192.168.1.1"]);
    expect(filterIPs(["10.0.0.1", "fd00::1"], ["!10.0.0.1"])).toEqual(["fd00::1"]);
    expect(filterIPs(["10.0.0.1", "10.0.1.1"], ["10.0.0.0/24"])).toEqual(["10.0.0.1"]);
  });
});
