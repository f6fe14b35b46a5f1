/** Pure pieces of the control plane: versions from image tags, service IPs, quantities, durations, files, kubeconfigs. */
import { generateKeyPairSync, X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { versionFromImageRef, versionString, schedulerHealthEndpoints, authorizationConfigAPIVersion } from "../../../src/machinery/kubernetes/version.js";
import { apiServerIPs, nthIPs } from "../../../src/machinery/kubernetes/network.js";
import { quantityValue } from "../../../src/machinery/kubernetes/quantity.js";
import { goDurationMs, generateKubeconfig } from "../../../src/machinery/kubernetes/kubeconfig.js";
import { encryptionConfigFile, schedulerConfigFile, auditPolicyFile } from "../../../src/machinery/kubernetes/config-files.js";
import { staticPodListYaml } from "../../../src/machinery/kubernetes/static-pod-list.js";
import { apiServerArgs } from "../../../src/machinery/kubernetes/control-plane-args.js";
import { nextRenderVersion, RENDERED_ANNOTATION } from "../../../src/machinery/kubernetes/render-version.js";
import { publicKeyPem } from "../../../src/machinery/pki/public-key.js";
import { newECDSACA } from "../../../src/machinery/pki/ca.js";
import { encodePrivateKeyPem } from "../../../src/machinery/pki/pem.js";
import { newResource } from "../../../src/machinery/resources/resource.js";
import type { APIServerConfigSpec } from "../../../src/machinery/resources/types/k8s-controlplane.js";

describe("versionFromImageRef", () => {
  it("reads the tag tolerantly and takes anything else as the newest version", () => {
    const v = (ref: string) => versionString(versionFromImageRef(ref));
    expect(v("registry.k8s.io/kube-apiserver:v1.37.2")).toBe("1.37.2");
    expect(v("127.0.0.1:5000/kube-apiserver:v1.30")).toBe("1.30.0");
    expect(v("registry.k8s.io/kube-apiserver:v1.36.0-rc.1@sha256:abcd")).toBe("1.36.0");
    expect(v("127.0.0.1:5000/kube-apiserver")).toBe("1.99.0"); // the registry port is not a tag
    expect(v("registry.k8s.io/kube-apiserver:latest")).toBe("1.99.0");
    expect(v("registry.k8s.io/kube-apiserver@sha256:abcd")).toBe("1.99.0");
    expect(schedulerHealthEndpoints(versionFromImageRef("x:v1.30.1")).liveness).toBe("/healthz");
    expect(schedulerHealthEndpoints(versionFromImageRef("x:v1.31.0")).readiness).toBe("/readyz");
    expect(authorizationConfigAPIVersion(versionFromImageRef("x:v1.29.3"))).toBe("apiserver.config.k8s.io/v1alpha1");
  });
});

describe("service IPs", () => {
  it("counts from the network address of each CIDR, and names a bad CIDR", () => {
    expect(apiServerIPs(["10.96.0.0/12", "fd00:10:96::/112"])).toEqual(["10.96.0.1", "fd00:10:96::1"]);
    expect(nthIPs(["10.96.3.7/12"], 10)).toEqual(["10.96.0.10"]);
    expect(nthIPs(["fd00::/120"], 255)).toEqual(["fd00::ff"]);
    expect(() => nthIPs(["10.0.0.0/31"], 10)).toThrow("failed to process Service CIDRs: 10.0.0.0/31 has no address number 10");
    expect(() => apiServerIPs(["10.96.0.0"])).toThrow('failed to process Service CIDRs: invalid CIDR "10.96.0.0"');
    expect(() => apiServerIPs(["nonsense/12"])).toThrow('invalid CIDR "nonsense/12"');
  });
});

describe("quantities and durations", () => {
  it("values quantities as Quantity.Value() and rejects what ParseQuantity rejects", () => {
    expect(quantityValue("512Mi")).toBe(512 * 2 ** 20);
    expect(quantityValue("1G")).toBe(1e9);
    expect(quantityValue("200m")).toBe(1);
    expect(quantityValue("1.5Gi")).toBe(1.5 * 2 ** 30);
    expect(quantityValue("1e3")).toBe(1000);
    expect(() => quantityValue("lots")).toThrow(/quantities must match the regular expression/);
    expect(() => quantityValue("1 Gi")).toThrow(/quantities must match/);
  });

  it("reads Go durations from the config", () => {
    expect(goDurationMs("8760h0m0s", "f")).toBe(8760 * 3_600_000);
    expect(goDurationMs("1h30m", "f")).toBe(5_400_000);
    expect(goDurationMs("1.5s", "f")).toBe(1500);
    expect(goDurationMs(2_000_000_000, "f")).toBe(2000); // nanoseconds
    expect(goDurationMs(undefined, "f")).toBe(0);
    expect(() => goDurationMs("1 year", "cluster.adminKubeconfig.certLifetime")).toThrow('cluster.adminKubeconfig.certLifetime: invalid duration "1 year"');
  });
});

describe("rendered files", () => {
  it("encryption config: secretbox (key2) first, then AES-CBC (key1), then identity", () => {
    expect(parse(encryptionConfigFile({ secretboxEncryptionSecret: "sb", aescbcEncryptionSecret: "cbc" })).resources[0].providers).toEqual([
      { secretbox: { keys: [{ name: "key2", secret: "sb" }] } },
      { aescbc: { keys: [{ name: "key1", secret: "cbc" }] } },
      { identity: {} },
    ]);
    expect(parse(encryptionConfigFile({ secretboxEncryptionSecret: "", aescbcEncryptionSecret: "" })).resources[0].providers).toEqual([{ identity: {} }]);
  });

  it("scheduler config keeps the user's settings but always uses the kubeconfig Talos writes", () => {
    const out = parse(schedulerConfigFile({ config: { clientConnection: { qps: 50, kubeconfig: "/elsewhere" }, profiles: [{ schedulerName: "x" }] } } as never));
    expect(out).toEqual({
      apiVersion: "kubescheduler.config.k8s.io/v1",
      kind: "KubeSchedulerConfiguration",
      clientConnection: { qps: 50, kubeconfig: "/system/secrets/kubernetes/kube-scheduler/kubeconfig" },
      profiles: [{ schedulerName: "x" }],
    });
    expect(() => schedulerConfigFile({ config: { clientConnection: "x" } } as never)).toThrow("clientConnection must be a map");
    expect(() => auditPolicyFile({ config: { kind: "Other" } })).toThrow('kind "Other" is not Policy');
  });

  it("static pod list as upstream marshals it (keys sorted, items null when empty)", () => {
    expect(staticPodListYaml([])).toBe("apiVersion: v1\nitems: null\nkind: PodList\n");
    expect(staticPodListYaml([{ kind: "Pod", apiVersion: "v1", metadata: { name: "a" } }])).toBe(
      "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: a\nkind: PodList\n",
    );
  });

  it("service-account.pub carries the label siderolabs/crypto gives each key type", () => {
    const ec = encodePrivateKeyPem(generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey);
    expect(publicKeyPem(ec)).toMatch(/^-----BEGIN EC PUBLIC KEY-----\n/);
    const rsa = encodePrivateKeyPem(generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey);
    expect(publicKeyPem(rsa)).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    expect(() => publicKeyPem("not a key")).toThrow("failed to parse PEM block");
  });
});

describe("kube-apiserver flags by version and user args", () => {
  const spec = (image: string, extraArgs: APIServerConfigSpec["extraArgs"] = {}, cloudProvider = ""): APIServerConfigSpec => ({
    image,
    cloudProvider,
    controlPlaneEndpoint: "https://cp:6443",
    etcdServers: ["https://127.0.0.1:2379"],
    localPort: 6443,
    serviceCIDR: ["10.96.0.0/12"],
    extraArgs,
    extraVolumes: [],
    environmentVariables: {},
    advertisedAddress: "",
    resources: { requests: { cpu: "", memory: "" }, limits: {} },
  });
  const flag = (args: string[], name: string) => args.filter((a) => a.startsWith(`--${name}=`));
  it("authorization config file from 1.29 (with the feature gate on 1.29), Node,RBAC before or when the user sets modes", () => {
    expect(flag(apiServerArgs(spec("x:v1.37.2")), "authorization-config")).toHaveLength(1);
    expect(flag(apiServerArgs(spec("x:v1.37.2")), "feature-gates")).toEqual([]);
    expect(flag(apiServerArgs(spec("x:v1.29.0")), "feature-gates")).toEqual(["--feature-gates=StructuredAuthorizationConfiguration=true"]);
    expect(flag(apiServerArgs(spec("x:v1.28.0")), "authorization-mode")).toEqual(["--authorization-mode=Node,RBAC"]);
    const user = apiServerArgs(spec("x:v1.37.2", { "authorization-mode": { values: ["Webhook"] } }));
    expect(flag(user, "authorization-mode")).toEqual(["--authorization-mode=Node,RBAC,Webhook"]);
    expect(flag(user, "authorization-config")).toEqual([]);
    expect(flag(apiServerArgs(spec("x:v1.37.2")), "advertise-address")).toEqual([]);
  });

  it("--cloud-provider only before 1.33; additive cipher suites; denied flags named", () => {
    expect(flag(apiServerArgs(spec("x:v1.32.0", {}, "external")), "cloud-provider")).toEqual(["--cloud-provider=external"]);
    expect(flag(apiServerArgs(spec("x:v1.33.0", {}, "external")), "cloud-provider")).toEqual([]);
    const ciphers = flag(apiServerArgs(spec("x:v1.37.2", { "tls-cipher-suites": { values: ["TLS_AES_128_GCM_SHA256,TLS_NEW"] } })), "tls-cipher-suites")[0];
    expect(ciphers.endsWith(",TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,TLS_NEW")).toBe(true);
    expect(() => apiServerArgs(spec("x:v1.37.2", { "tls-cert-file": { values: ["/x"] } }))).toThrow('extra arg "tls-cert-file" is not allowed');
  });
});

describe("kubeconfigs and render versions", () => {
  it("writes clientcmd's layout with a client certificate from the CA", async () => {
    const ca = await newECDSACA("kubernetes");
    const text = await generateKubeconfig({
      clusterName: "c",
      issuingCA: ca,
      acceptedCAs: [ca.crt],
      lifetimeMs: 3_600_000,
      commonName: "who",
      organization: "grp",
      endpoint: "https://h:6443",
      username: "u",
      contextName: "ctx",
    });
    const b64 = (s: string) => Buffer.from(s).toString("base64");
    const doc = parse(text);
    expect(text).toBe(
      "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: " +
        b64(ca.crt) +
        "\n    server: https://h:6443\n  name: c\ncontexts:\n- context:\n    cluster: c\n    namespace: default\n    user: u@c\n  name: ctx@c\ncurrent-context: ctx@c\nkind: Config\npreferences: {}\nusers:\n- name: u@c\n  user:\n    client-certificate-data: " +
        doc.users[0].user["client-certificate-data"] +
        "\n    client-key-data: " +
        doc.users[0].user["client-key-data"] +
        "\n",
    );
    const cert = new X509Certificate(Buffer.from(doc.users[0].user["client-certificate-data"], "base64"));
    expect(cert.subject).toBe("O=grp\nCN=who");
    expect(cert.verify(new X509Certificate(ca.crt).publicKey)).toBe(true);
  });

  it("a render version moves only with the rendered digest", () => {
    const status = (version: string, rendered: string) => {
      const r = newResource({ namespace: "controlplane", type: "SecretStatuses.kubernetes.talos.dev", id: "static-pods" }, { ready: true, version });
      r.metadata.annotations[RENDERED_ANNOTATION] = rendered;
      return r;
    };
    expect(nextRenderVersion(undefined, "a")).toBe("1");
    expect(nextRenderVersion(status("3", "a"), "a")).toBe("3");
    expect(nextRenderVersion(status("3", "a"), "b")).toBe("4");
  });
});
