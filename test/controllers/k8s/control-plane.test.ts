/**
 * The control plane chain with the real store, runtime and certificates: machine config → component configs
 * (namespace controlplane) → files rendered under a temporary root with their statuses → the three static pods,
 * with upstream's flags, mounts, probes, security settings and version annotations.
 */
import { X509Certificate, createPublicKey } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { generateConfigs } from "../../../src/machinery/generate/index.js";
import { loadConfig, patchConfig, parsePatch } from "../../../src/machinery/config/index.js";
import { newResource } from "../../../src/machinery/resources/resource.js";
import { read, readSpec } from "../../../src/machinery/resources/read.js";
import { CONFIG_NS, MachineConfigType, MachineTypeType } from "../../../src/machinery/resources/types/config.js";
import { HostnameStatusType, NetworkStatusType, NodeAddressType } from "../../../src/machinery/resources/types/network.js";
import { EtcdCertsType, KubernetesRootType } from "../../../src/machinery/resources/types/secrets.js";
import { TimeStatusType } from "../../../src/machinery/resources/types/time.js";
import { K8S_NS, StaticPodType } from "../../../src/machinery/resources/types/k8s.js";
import { RUNTIME_NS, ServiceType } from "../../../src/machinery/resources/types/runtime.js";
import {
  AdmissionControlConfigType,
  APIServerConfigType,
  AuditPolicyConfigType,
  AuthorizationConfigType,
  ConfigStatusType,
  ControllerManagerConfigType,
  SchedulerConfigType,
  SecretsStatusType,
} from "../../../src/machinery/resources/types/k8s-controlplane.js";
import { K8S_CONTROLPLANE_TYPES } from "../../../src/machinery/resources/types/k8s-controlplane.js";
import { SECRETS_TYPES } from "../../../src/machinery/resources/types/secrets.js";
import type { ResourceType } from "../../../src/machinery/resources/resource.js";
import { specYaml } from "../../../src/machinery/resources/render.js";
import { fromBinary } from "@bufbuild/protobuf";
import { APIServerConfigSpecSchema } from "../../../src/machinery/api/gen/resource/definitions/k8s/k8s_pb.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { fakeLoopbackHttp } from "../../../src/host/loopback-http.js";
import { rootEtcdController } from "../../../src/controllers/secrets/root-etcd.js";
import { etcdCertsController } from "../../../src/controllers/secrets/etcd-certs.js";
import { kubernetesControlPlaneControllers } from "../../../src/controllers/k8s/index.js";
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

function node(s: InMemoryState, addrs = ["10.5.0.2/24"]): void {
  put(s, "network", HostnameStatusType.type, "hostname", { hostname: "cp1", domainname: "" }, "network.HostnameSpecController");
  for (const id of ["accumulative-no-k8s", "routed-no-k8s", "current-no-k8s"]) {
    put(s, "network", NodeAddressType.type, id, { addresses: addrs, sortAlgorithm: "v1" }, "network.NodeAddressController");
  }
  put(s, "network", NetworkStatusType.type, "status", { addressReady: true, connectivityReady: true, hostnameReady: true, etcFilesReady: true }, "network.StatusController");
  put(s, "runtime", TimeStatusType.type, "node", { synced: true, epoch: 0, syncDisabled: true }, "time.SyncController");
}

const etcdService = (s: InMemoryState, healthy: boolean) =>
  put(s, RUNTIME_NS, ServiceType.type, "etcd", { running: true, healthy, unknown: false }, "v1alpha1.ServiceController");

const roots: string[] = [];
const runtimes: { stop(): Promise<void> }[] = [];
// The runtime stops before its root goes: this hook runs before the harness's own stop (after-hooks run in
// reverse order), and a controller still writing under the root made rmSync fail with ENOTEMPTY.
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.stop()));
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

function chain() {
  const root = mkdtempSync(path.join(tmpdir(), "machined-cp-"));
  roots.push(root);
  const s = new InMemoryState();
  const rt = startRuntime(s, [rootEtcdController(), etcdCertsController(), ...kubernetesControlPlaneControllers({ root, http: fakeLoopbackHttp() })]);
  runtimes.push(rt);
  return { s, rt, root, file: (p: string) => path.join(root, p) };
}

const pods = (s: InMemoryState) => s.list(K8S_NS, StaticPodType.type).map((r) => r.metadata.id);
type Pod = Record<string, any>;
const pod = (s: InMemoryState, id: string) => readSpec(s, StaticPodType, id) as Pod | undefined;
const asRoot = process.getuid?.() === 0;

describe("k8s.ControlPlane*Controllers: the component configs", () => {
  it("derive APIServer/ControllerManager/Scheduler/Admission/Audit/Authorization configs from a control plane config", async () => {
    const { s } = chain();
    publish(
      s,
      await configText(
        "controlplane",
        `cluster:
  apiServer:
    extraArgs:
      enable-admission-plugins: PodSecurity
    extraVolumes:
      - hostPath: /var/lib/audit
        mountPath: /etc/audit.d
        readonly: true
    env:
      HTTP_PROXY: http://proxy:3128
    resources:
      requests:
        cpu: 1
      limits:
        memory: 2Gi
  scheduler:
    config:
      profiles:
        - schedulerName: default-scheduler
`,
      ),
    );
    await eventually(() => s.list("controlplane", AuthorizationConfigType.type).length === 1, 5000, "configs");
    expect(readSpec(s, APIServerConfigType, "kube-apiserver")).toEqual({
      image: "registry.k8s.io/kube-apiserver:v1.37.2",
      cloudProvider: "",
      controlPlaneEndpoint: "https://10.5.0.2:6443",
      etcdServers: ["https://127.0.0.1:2379"],
      localPort: 6443,
      serviceCIDR: ["10.96.0.0/12"],
      extraArgs: { "enable-admission-plugins": { values: ["PodSecurity"] } },
      extraVolumes: [{ name: "etc-audit-d", hostPath: "/var/lib/audit", mountPath: "/etc/audit.d", readonly: true }],
      environmentVariables: { HTTP_PROXY: "http://proxy:3128" },
      advertisedAddress: "$(POD_IP)",
      resources: { requests: { cpu: "1", memory: "" }, limits: { memory: "2Gi" } },
    });
    expect(readSpec(s, ControllerManagerConfigType, "kube-controller-manager")).toEqual({
      enabled: true,
      image: "registry.k8s.io/kube-controller-manager:v1.37.2",
      cloudProvider: "",
      podCIDRs: ["10.244.0.0/16"],
      serviceCIDRs: ["10.96.0.0/12"],
      extraArgs: {},
      extraVolumes: [],
      environmentVariables: {},
      resources: { requests: { cpu: "", memory: "" }, limits: {} },
    });
    expect(readSpec(s, SchedulerConfigType, "kube-scheduler")).toMatchObject({ enabled: true, config: { profiles: [{ schedulerName: "default-scheduler" }] } });
    expect(readSpec(s, AdmissionControlConfigType, "admission-control")!.config.map((p) => p.name)).toEqual(["PodSecurity"]);
    expect(readSpec(s, AuditPolicyConfigType, "audit-policy")).toEqual({ config: { apiVersion: "audit.k8s.io/v1", kind: "Policy", rules: [{ level: "Metadata" }] } });
    expect(readSpec(s, AuthorizationConfigType, "authorization")).toEqual({
      image: "registry.k8s.io/kube-apiserver:v1.37.2",
      config: [
        { type: "Node", name: "node", webhook: {} },
        { type: "RBAC", name: "rbac", webhook: {} },
      ],
    });
    // The YAML talosctl shows carries upstream's keys, Go's empty maps and lists, and sorted map keys.
    const yaml = APIServerConfigType.toYaml!(readSpec(s, APIServerConfigType, "kube-apiserver")!);
    expect(yaml).toContain("serviceCIDR:\n    - 10.96.0.0/12\n");
    expect(parse(ControllerManagerConfigType.toYaml!(readSpec(s, ControllerManagerConfigType, "kube-controller-manager")!))).toMatchObject({ extraArgs: {}, extraVolumes: [] });
  });

  it("Node and RBAC always authorize; an API server older than 1.29 gets no authorizers; workers get no configs", async () => {
    const { s } = chain();
    publish(s, await configText("controlplane", "cluster:\n  apiServer:\n    authorizationConfig:\n      - type: Webhook\n        name: webhook\n        webhook:\n          timeout: 3s\n"));
    await eventually(() => readSpec(s, AuthorizationConfigType, "authorization")?.config.length === 3, 5000, "authorizers");
    expect(readSpec(s, AuthorizationConfigType, "authorization")!.config).toEqual([
      { type: "Node", name: "node", webhook: {} },
      { type: "RBAC", name: "rbac", webhook: {} },
      { type: "Webhook", name: "webhook", webhook: { timeout: "3s" } },
    ]);
    publish(s, await configText("controlplane", "cluster:\n  apiServer:\n    image: registry.k8s.io/kube-apiserver:v1.28.4\n"));
    await eventually(() => readSpec(s, AuthorizationConfigType, "authorization")?.config.length === 0, 5000, "no authorizers");
    publish(s, await configText("worker"));
    await eventually(() => s.list("controlplane", APIServerConfigType.type).length === 0, 5000, "gone");
    expect(s.list("controlplane", SchedulerConfigType.type)).toEqual([]);
    expect(s.list("controlplane", AuditPolicyConfigType.type)).toEqual([]);
  });
});

describe("k8s.RenderSecretsStaticPodController and k8s.RenderConfigsStaticPodController", () => {
  it("write each component's secrets and configs (0400, owned by its uid) under the root and publish their versions", async () => {
    const { s, file } = chain();
    const b = (await gen).secrets;
    publish(s, await configText("controlplane"));
    node(s);
    await eventually(() => read(s, SecretsStatusType, "static-pods") !== undefined && read(s, ConfigStatusType, "static-pods") !== undefined, 15_000, "statuses");
    expect(readSpec(s, SecretsStatusType, "static-pods")).toEqual({ ready: true, version: "1" });

    const secrets = "system/secrets/kubernetes";
    const expected: Record<string, [number, string[]]> = {
      "kube-apiserver": [
        65534,
        [
          "aggregator-ca.crt", "apiserver-kubelet-client.crt", "apiserver-kubelet-client.key", "apiserver.crt", "apiserver.key", "ca.crt",
          "encryptionconfig.yaml", "etcd-client-ca.crt", "etcd-client.crt", "etcd-client.key", "front-proxy-client.crt", "front-proxy-client.key",
          "service-account.key", "service-account.pub",
        ],
      ],
      "kube-controller-manager": [65535, ["ca.crt", "ca.key", "kubeconfig", "service-account.key"]],
      "kube-scheduler": [65536, ["kubeconfig"]],
    };
    for (const [component, [uid, names]] of Object.entries(expected)) {
      for (const name of names) {
        const st = statSync(file(`${secrets}/${component}/${name}`));
        expect(st.mode & 0o777, `${component}/${name}`).toBe(0o400);
        if (asRoot) expect([st.uid, st.gid], `${component}/${name}`).toEqual([uid, uid]);
      }
    }
    const text = (p: string) => readFileSync(file(p), "utf8");
    const api = `${secrets}/kube-apiserver`;
    expect(text(`${api}/ca.crt`)).toBe(b.certs.k8s.crt);
    expect(text(`${api}/aggregator-ca.crt`)).toBe(b.certs.k8sAggregator.crt);
    expect(text(`${api}/etcd-client-ca.crt`)).toBe(b.certs.etcd.crt);
    const etcdClient = new X509Certificate(text(`${api}/etcd-client.crt`));
    expect(etcdClient.subject).toBe("CN=kube-apiserver");
    expect(etcdClient.verify(new X509Certificate(b.certs.etcd.crt).publicKey)).toBe(true);
    expect(text(`${api}/etcd-client.key`)).toBe(readSpec(s, EtcdCertsType, "etcd")!.etcdAPIServer.key);
    expect(text(`${api}/service-account.key`)).toBe(b.certs.k8sServiceAccount.key);
    expect(text(`${api}/service-account.pub`)).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    expect(createPublicKey(text(`${api}/service-account.pub`)).export({ format: "jwk" })).toEqual(createPublicKey(b.certs.k8sServiceAccount.key).export({ format: "jwk" }));
    expect(new X509Certificate(text(`${api}/apiserver.crt`)).subject).toBe("O=kube-master\nCN=kube-apiserver");
    expect(parse(text(`${api}/encryptionconfig.yaml`))).toEqual({
      apiVersion: "v1",
      kind: "EncryptionConfig",
      resources: [{ providers: [{ secretbox: { keys: [{ name: "key2", secret: b.secrets.secretboxEncryptionSecret }] } }, { identity: {} }], resources: ["secrets"] }],
    });
    const cm = `${secrets}/kube-controller-manager`;
    expect(text(`${cm}/ca.crt`)).toBe(b.certs.k8s.crt);
    expect(text(`${cm}/ca.key`)).toBe(b.certs.k8s.key);
    expect(parse(text(`${cm}/kubeconfig`)).users[0].name).toBe("system:kube-controller-manager@demo");
    expect(parse(text(`${secrets}/kube-scheduler/kubeconfig`)).users[0].name).toBe("system:kube-scheduler@demo");

    const config = "system/config/kubernetes";
    for (const [component, uid, names] of [
      ["kube-apiserver", 65534, ["admission-control-config.yaml", "auditpolicy.yaml", "authorization-config.yaml"]],
      ["kube-scheduler", 65536, ["scheduler-config.yaml"]],
    ] as const) {
      for (const name of names) {
        const st = statSync(file(`${config}/${component}/${name}`));
        expect(st.mode & 0o777).toBe(0o400);
        if (asRoot) expect([st.uid, st.gid]).toEqual([uid, uid]);
      }
    }
    expect(parse(text(`${config}/kube-apiserver/admission-control-config.yaml`))).toMatchObject({
      apiVersion: "apiserver.config.k8s.io/v1",
      kind: "AdmissionConfiguration",
      plugins: [{ name: "PodSecurity", configuration: { kind: "PodSecurityConfiguration", defaults: { enforce: "baseline" } } }],
    });
    expect(parse(text(`${config}/kube-apiserver/auditpolicy.yaml`))).toEqual({ apiVersion: "audit.k8s.io/v1", kind: "Policy", metadata: {}, rules: [{ level: "Metadata" }] });
    expect(text(`${config}/kube-apiserver/authorization-config.yaml`)).toBe(
      "apiVersion: apiserver.config.k8s.io/v1beta1\nauthorizers:\n- name: node\n  type: Node\n- name: rbac\n  type: RBAC\nkind: AuthorizationConfiguration\n",
    );
    expect(text(`${config}/kube-scheduler/scheduler-config.yaml`)).toBe(
      "apiVersion: kubescheduler.config.k8s.io/v1\nclientConnection:\n  kubeconfig: /system/secrets/kubernetes/kube-scheduler/kubeconfig\nkind: KubeSchedulerConfiguration\n",
    );
    // The four config resources' versions, joined (upstream).
    const versions = [AdmissionControlConfigType, AuditPolicyConfigType, AuthorizationConfigType, SchedulerConfigType].map(
      (t) => s.list("controlplane", t.type)[0].metadata.version,
    );
    expect(readSpec(s, ConfigStatusType, "static-pods")).toEqual({ ready: true, version: versions.join("") });
  });

  it("the secrets version moves only when a rendered file changes", async () => {
    const { s, file } = chain();
    publish(s, await configText("controlplane"));
    node(s);
    await eventually(() => readSpec(s, SecretsStatusType, "static-pods")?.version === "1", 15_000, "rendered");
    const crt = () => readFileSync(file("system/secrets/kubernetes/kube-apiserver/apiserver.crt"), "utf8");
    const before = crt();
    // Something the secrets do not depend on.
    publish(s, await configText("controlplane", "machine:\n  sysctls:\n    vm.max_map_count: \"262144\"\n"));
    await settle();
    await settle();
    expect(readSpec(s, SecretsStatusType, "static-pods")!.version).toBe("1");
    // A new node address: new API server and etcd certificates, so the pods must restart.
    node(s, ["10.5.0.2/24", "10.5.0.9/24"]);
    await eventually(() => (new X509Certificate(crt()).subjectAltName ?? "").includes("IP Address:10.5.0.9"), 15_000, "re-rendered");
    expect(crt()).not.toBe(before);
    await eventually(() => Number(readSpec(s, SecretsStatusType, "static-pods")!.version) >= 2, 5000, "new version");
  });
});

describe("k8s.ControlPlaneStaticPodController", () => {
  it("renders the three pods as upstream once etcd is healthy and the files are written", async () => {
    const { s } = chain();
    publish(s, await configText("controlplane", "cluster:\n  apiServer:\n    extraArgs:\n      enable-admission-plugins: PodSecurity\n"));
    node(s);
    await eventually(() => read(s, SecretsStatusType, "static-pods") !== undefined && read(s, ConfigStatusType, "static-pods") !== undefined, 15_000, "statuses");
    await settle();
    expect(pods(s)).toEqual([]); // no etcd service yet
    etcdService(s, false);
    await settle();
    expect(pods(s)).toEqual([]); // etcd not healthy yet
    etcdService(s, true);
    await eventually(() => pods(s).length === 3, 5000, "pods");
    expect(pods(s)).toEqual(["kube-apiserver", "kube-controller-manager", "kube-scheduler"]);

    const api = pod(s, "kube-apiserver")!;
    const apiConfig = read(s, APIServerConfigType, "kube-apiserver")!;
    expect(api.metadata).toEqual({
      name: "kube-apiserver",
      namespace: "kube-system",
      annotations: {
        "talos.dev/secrets-version": readSpec(s, SecretsStatusType, "static-pods")!.version,
        "talos.dev/config-file-version": readSpec(s, ConfigStatusType, "static-pods")!.version,
        "talos.dev/config-version": String(apiConfig.metadata.version),
      },
      labels: {
        tier: "control-plane",
        "k8s-app": "kube-apiserver",
        component: "kube-apiserver",
        "app.kubernetes.io/name": "kube-apiserver",
        "app.kubernetes.io/version": "1.37.2",
        "app.kubernetes.io/component": "control-plane",
        "app.kubernetes.io/managed-by": "Talos",
      },
    });
    const sec = "/system/secrets/kubernetes/kube-apiserver";
    expect(api.spec.containers[0].command).toEqual([
      "/usr/local/bin/kube-apiserver",
      "--admission-control-config-file=/system/config/kubernetes/kube-apiserver/admission-control-config.yaml",
      "--advertise-address=$(POD_IP)",
      "--allow-privileged=true",
      "--anonymous-auth=false",
      "--api-audiences=https://10.5.0.2:6443",
      "--audit-log-maxage=30",
      "--audit-log-maxbackup=10",
      "--audit-log-maxsize=100",
      "--audit-log-path=/var/log/audit/kube/kube-apiserver.log",
      "--audit-policy-file=/system/config/kubernetes/kube-apiserver/auditpolicy.yaml",
      "--authorization-config=/system/config/kubernetes/kube-apiserver/authorization-config.yaml",
      "--bind-address=0.0.0.0",
      `--client-ca-file=${sec}/ca.crt`,
      "--enable-admission-plugins=NodeRestriction,PodSecurity",
      "--enable-bootstrap-token-auth=true",
      `--encryption-provider-config=${sec}/encryptionconfig.yaml`,
      `--etcd-cafile=${sec}/etcd-client-ca.crt`,
      `--etcd-certfile=${sec}/etcd-client.crt`,
      `--etcd-keyfile=${sec}/etcd-client.key`,
      "--etcd-servers=https://127.0.0.1:2379",
      `--kubelet-client-certificate=${sec}/apiserver-kubelet-client.crt`,
      `--kubelet-client-key=${sec}/apiserver-kubelet-client.key`,
      "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
      "--profiling=false",
      `--proxy-client-cert-file=${sec}/front-proxy-client.crt`,
      `--proxy-client-key-file=${sec}/front-proxy-client.key`,
      "--requestheader-allowed-names=front-proxy-client",
      `--requestheader-client-ca-file=${sec}/aggregator-ca.crt`,
      "--requestheader-extra-headers-prefix=X-Remote-Extra-",
      "--requestheader-group-headers=X-Remote-Group",
      "--requestheader-username-headers=X-Remote-User",
      "--secure-port=6443",
      "--service-account-issuer=https://10.5.0.2:6443",
      `--service-account-key-file=${sec}/service-account.pub`,
      `--service-account-signing-key-file=${sec}/service-account.key`,
      "--service-cluster-ip-range=10.96.0.0/12",
      "--tls-cert-file=/system/secrets/kubernetes/kube-apiserver/apiserver.crt",
      "--tls-cipher-suites=TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
      "--tls-min-version=VersionTLS12",
      "--tls-private-key-file=/system/secrets/kubernetes/kube-apiserver/apiserver.key",
    ]);
    expect(api.spec).toMatchObject({
      priority: 2000000000,
      priorityClassName: "system-cluster-critical",
      hostNetwork: true,
      securityContext: { runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534 },
      volumes: [
        { name: "secrets", hostPath: { path: "/system/secrets/kubernetes/kube-apiserver" } },
        { name: "config", hostPath: { path: "/system/config/kubernetes/kube-apiserver" } },
        { name: "audit", hostPath: { path: "/var/log/audit/kube" } },
      ],
    });
    expect(api.spec.containers[0]).toMatchObject({
      env: [{ name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } }],
      volumeMounts: [
        { name: "secrets", mountPath: "/system/secrets/kubernetes/kube-apiserver", readOnly: true },
        { name: "config", mountPath: "/system/config/kubernetes/kube-apiserver", readOnly: true },
        { name: "audit", mountPath: "/var/log/audit/kube" },
      ],
      resources: { requests: { cpu: "200m", memory: "512Mi" } },
      securityContext: { allowPrivilegeEscalation: false, capabilities: { add: ["NET_BIND_SERVICE"], drop: ["ALL"] }, seccompProfile: { type: "RuntimeDefault" } },
    });
    expect(api.spec.containers[0].livenessProbe).toBeUndefined();
    expect(api.status).toEqual({});

    const cm = pod(s, "kube-controller-manager")!;
    const cms = "/system/secrets/kubernetes/kube-controller-manager";
    expect(cm.spec.containers[0].command).toEqual([
      "/usr/local/bin/kube-controller-manager",
      "--use-service-account-credentials",
      "--allocate-node-cidrs=true",
      `--authentication-kubeconfig=${cms}/kubeconfig`,
      `--authorization-kubeconfig=${cms}/kubeconfig`,
      "--bind-address=127.0.0.1",
      "--cluster-cidr=10.244.0.0/16",
      `--cluster-signing-cert-file=${cms}/ca.crt`,
      `--cluster-signing-key-file=${cms}/ca.key`,
      "--configure-cloud-routes=false",
      "--controllers=*,tokencleaner",
      `--kubeconfig=${cms}/kubeconfig`,
      "--leader-elect=true",
      "--profiling=false",
      `--root-ca-file=${cms}/ca.crt`,
      `--service-account-private-key-file=${cms}/service-account.key`,
      "--service-cluster-ip-range=10.96.0.0/12",
      "--tls-min-version=VersionTLS13",
    ]);
    const healthz = { path: "/healthz", port: 10257, host: "localhost", scheme: "HTTPS" };
    expect(cm.spec.containers[0]).toMatchObject({
      startupProbe: { httpGet: healthz, periodSeconds: 5, failureThreshold: 12, timeoutSeconds: 15 },
      livenessProbe: { httpGet: healthz, timeoutSeconds: 15 },
      resources: { requests: { cpu: "50m", memory: "256Mi" } },
      securityContext: { capabilities: { drop: ["ALL"] } },
    });
    expect(cm.spec.securityContext).toEqual({ runAsNonRoot: true, runAsUser: 65535, runAsGroup: 65535 });
    expect(Object.keys(cm.metadata.annotations).sort()).toEqual(["talos.dev/config-version", "talos.dev/secrets-version"]);

    const sched = pod(s, "kube-scheduler")!;
    expect(sched.spec.containers[0].command).toEqual([
      "/usr/local/bin/kube-scheduler",
      "--authentication-kubeconfig=/system/secrets/kubernetes/kube-scheduler/kubeconfig",
      "--authentication-tolerate-lookup-failure=false",
      "--authorization-kubeconfig=/system/secrets/kubernetes/kube-scheduler/kubeconfig",
      "--bind-address=127.0.0.1",
      "--config=/system/config/kubernetes/kube-scheduler/scheduler-config.yaml",
      "--leader-elect=true",
      "--profiling=false",
      "--tls-min-version=VersionTLS13",
    ]);
    const probe = (p: string) => ({ httpGet: { path: p, port: 10259, host: "localhost", scheme: "HTTPS" } });
    // Talos 1.14's budgets: 60 s to start, 15 s per probe.
    expect(sched.spec.containers[0]).toMatchObject({
      startupProbe: { ...probe("/livez"), periodSeconds: 5, failureThreshold: 12, timeoutSeconds: 15 },
      livenessProbe: { ...probe("/livez"), timeoutSeconds: 15 },
      readinessProbe: { ...probe("/readyz"), timeoutSeconds: 15 },
    });
    expect(sched.spec.securityContext.runAsUser).toBe(65536);
    expect(sched.spec.volumes).toEqual([
      { name: "secrets", hostPath: { path: "/system/secrets/kubernetes/kube-scheduler" } },
      { name: "config", hostPath: { path: "/system/config/kubernetes/kube-scheduler" } },
    ]);
  });

  it("a new image bumps the component config version the pod carries (what upgrade-k8s waits for)", async () => {
    const { s } = chain();
    publish(s, await configText("controlplane"));
    node(s);
    etcdService(s, true);
    await eventually(() => pods(s).length === 3, 15_000, "pods");
    const version = () => pod(s, "kube-apiserver")!.metadata.annotations["talos.dev/config-version"];
    const first = version();
    const schedulerBefore = pod(s, "kube-scheduler")!.metadata.annotations["talos.dev/config-version"];
    publish(s, await configText("controlplane", "cluster:\n  apiServer:\n    image: registry.k8s.io/kube-apiserver:v1.36.3\n"));
    await eventually(() => pod(s, "kube-apiserver")!.spec.containers[0].image === "registry.k8s.io/kube-apiserver:v1.36.3", 5000, "new image");
    expect(version()).toBe(String(read(s, APIServerConfigType, "kube-apiserver")!.metadata.version));
    expect(version()).not.toBe(first);
    expect(pod(s, "kube-apiserver")!.metadata.labels["app.kubernetes.io/version"]).toBe("1.36.3");
    // The scheduler's config did not change.
    expect(pod(s, "kube-scheduler")!.metadata.annotations["talos.dev/config-version"]).toBe(schedulerBefore);
  });

  it("keeps pods while etcd is unhealthy, removes them without an etcd service; disabled components and bad settings", async () => {
    const { s, rt } = chain();
    publish(
      s,
      await configText(
        "controlplane",
        `machine:
  controlPlane:
    scheduler:
      disabled: true
cluster:
  controllerManager:
    env:
      PRICE: $5
    resources:
      limits:
        memory: 1Gi
`,
      ),
    );
    node(s);
    etcdService(s, true);
    await eventually(() => pods(s).length === 2, 15_000, "pods");
    expect(pods(s)).toEqual(["kube-apiserver", "kube-controller-manager"]);
    const cm = pod(s, "kube-controller-manager")!.spec.containers[0];
    expect(cm.env).toEqual([
      { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
      { name: "PRICE", value: "$$5" },
      { name: "GOMEMLIMIT", value: String(Math.floor((2 ** 30 * 95) / 100)) },
    ]);
    expect(cm.resources).toEqual({ limits: { memory: "1Gi" }, requests: { cpu: "50m", memory: "256Mi" } });

    etcdService(s, false);
    await settle();
    expect(pods(s)).toEqual(["kube-apiserver", "kube-controller-manager"]);
    s.destroy({ namespace: RUNTIME_NS, type: ServiceType.type, id: "etcd" }, "v1alpha1.ServiceController");
    await eventually(() => pods(s).length === 0, 5000, "pods removed");

    etcdService(s, true);
    publish(s, await configText("controlplane", "cluster:\n  apiServer:\n    extraArgs:\n      etcd-servers: https://10.0.0.1:2379\n"));
    await eventually(
      () => rt.status("k8s.ControlPlaneStaticPodController")?.lastError === 'error updating static pod for "APIServerConfigs.kubernetes.talos.dev": extra arg "etcd-servers" is not allowed',
      5000,
      "denied flag",
    );
    publish(s, await configText("controlplane", "cluster:\n  apiServer:\n    resources:\n      requests:\n        memory: lots\n"));
    await eventually(() => /error parsing memory request: quantities must match/.test(rt.status("k8s.ControlPlaneStaticPodController")?.lastError ?? ""), 5000, "bad quantity");
  });

  it("every resource of the chain renders in both encodings (what the COSI API sends)", async () => {
    const { s } = chain();
    publish(s, await configText("controlplane"));
    node(s);
    etcdService(s, true);
    await eventually(() => pods(s).length === 3, 15_000, "pods");
    let rendered = 0;
    for (const t of [...K8S_CONTROLPLANE_TYPES, StaticPodType, ...SECRETS_TYPES] as ResourceType[]) {
      for (const r of s.list(t.defaultNamespace, t.type)) {
        expect(specYaml(t, r.spec).length).toBeGreaterThan(0);
        expect(t.toProto(r.spec)).toBeInstanceOf(Uint8Array);
        rendered++;
      }
    }
    // 8 controlplane configs/statuses, 3 pods, etcd + k8s roots, CertSAN k8s, etcd certs, kubelet secrets, 2 k8s certs.
    expect(rendered).toBe(19);
    const proto = fromBinary(APIServerConfigSpecSchema, APIServerConfigType.toProto(readSpec(s, APIServerConfigType, "kube-apiserver")!));
    expect(proto.serviceCidRs).toEqual(["10.96.0.0/12"]);
    expect(proto.localPort).toBe(6443n);
  });

  it("a worker has no root, no files and no pods", async () => {
    const { s, root } = chain();
    publish(s, await configText("worker"));
    node(s);
    etcdService(s, true);
    await settle();
    await settle();
    expect(readSpec(s, KubernetesRootType, "k8s")).toBeUndefined();
    expect(pods(s)).toEqual([]);
    expect(() => statSync(path.join(root, "system"))).toThrow();
  });
});
