/**
 * The bootstrap manifest chain against a real kube-apiserver v1.37.2 on etcd 3.7.3, both host processes on free
 * loopback ports (the binaries `make kube-images` caches; KUBE_BIN / ETCD_BIN override). Certificates come from
 * src/machinery/pki, the admin kubeconfig is built here as the KubernetesSecrets controller would. Checks upstream's
 * semantics end to end: every object created with server-side apply, the cli-utils inventory listing them, a
 * second run changing nothing, an object deleted by hand staying deleted, a CRD and its custom resource from an
 * inline manifest, and `cni: none` rendering no flannel. Skips, saying why, without the binaries.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubeApi, type KubeWriter } from "../../../src/host/kube/api.js";
import type { KubeObject } from "../../../src/machinery/kubernetes/objects.js";
import { ExtKeyUsage, issueKubernetesAdminCert, issueLeaf, KeyUsage, newECDSACA } from "../../../src/machinery/pki/index.js";
import { formatObjectRef, objectRef } from "../../../src/machinery/kubernetes/manifest-objects.js";
import { CONTROLPLANE_NS, ManifestStatusType, ManifestType, type ManifestSpec, type ManifestStatusSpec } from "../../../src/machinery/resources/types/k8s-manifests.js";
import { RUNTIME_NS, ServiceType } from "../../../src/machinery/resources/types/runtime.js";
import { KubernetesCertsType, KubernetesRootType, SECRETS_NS } from "../../../src/machinery/resources/types/secrets.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { applyManifests, INVENTORY_ANNOTATION } from "../../../src/controllers/k8s/manifest-apply.js";
import { kubernetesManifestControllers } from "../../../src/controllers/k8s/manifest-controllers.js";
import { freePort } from "../../supervisor/helpers.js";
import { controlPlaneConfig, eventually, publishConfig, put, spec, startRuntime } from "../runtime/harness.js";

const ARCH = process.arch === "arm64" ? "arm64" : "amd64";
const CACHE = "/var/cache/machined/kube-images";
const KUBE = process.env.KUBE_BIN ?? `${CACHE}/kube/v1.37.2-${ARCH}/bin/bin/kube`;
const ETCD = process.env.ETCD_BIN ?? `${CACHE}/etcd/v3.7.3-${ARCH}/bin/bin/etcd`;
const missing = !existsSync(KUBE) ? `kube-apiserver (multi-call kube binary) not at ${KUBE}: run make kube-images` : !existsSync(ETCD) ? `etcd not at ${ETCD}: run make kube-images` : "";
if (missing) console.warn(`skipping the kube-apiserver manifest apply test: ${missing}`);

const INLINE = `  inlineManifests:
    - name: widgets
      contents: |
        apiVersion: example.test/v1
        kind: Widget
        metadata: {name: w1, namespace: widgets}
        spec: {size: 3}
        ---
        apiVersion: v1
        kind: Namespace
        metadata: {name: widgets}
        ---
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata: {name: widgets.example.test}
        spec:
          group: example.test
          scope: Namespaced
          names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
          versions:
            - name: v1
              served: true
              storage: true
              schema:
                openAPIV3Schema:
                  type: object
                  properties:
                    spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`;
const PRISM = "  features:\n    kubePrism:\n      enabled: true\n      port: 7445";

describe.skipIf(!!missing)("bootstrap manifests against kube-apiserver v1.37.2", () => {
  const procs: ChildProcess[] = [];
  let dir = "";
  let kubeconfig = "";
  let client: KubeWriter;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "manifests-apiserver-"));
    const [etcdClient, etcdPeer, apiPort] = [await freePort(), await freePort(), await freePort()];
    const ca = await newECDSACA("kubernetes");
    const serving = await issueLeaf(ca, {
      subject: { commonName: "kube-apiserver", organizations: ["kube-master"] },
      keyUsage: KeyUsage.digitalSignature | KeyUsage.keyEncipherment,
      extKeyUsage: [ExtKeyUsage.ServerAuth],
      ipSANs: ["127.0.0.1"],
      dnsSANs: ["localhost"],
      validityMs: 3_600_000,
    });
    const admin = await issueKubernetesAdminCert(ca, { commonName: "talos:admin" });
    const sa = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
    const file = (name: string, text: string) => {
      writeFileSync(join(dir, name), text, { mode: 0o600 });
      return join(dir, name);
    };

    procs.push(
      start(ETCD, [
        "--name=test",
        `--data-dir=${join(dir, "etcd")}`,
        `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
        `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
        `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-cluster=test=http://127.0.0.1:${etcdPeer}`,
      ], join(dir, "etcd.log")),
    );
    procs.push(
      start(KUBE, [
        "kube-apiserver",
        `--etcd-servers=http://127.0.0.1:${etcdClient}`,
        `--secure-port=${apiPort}`,
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        // A loopback advertise address is refused by the endpoint reconciler; this test has no other address to use.
        "--endpoint-reconciler-type=none",
        `--tls-cert-file=${file("apiserver.crt", serving.crt)}`,
        `--tls-private-key-file=${file("apiserver.key", serving.key)}`,
        `--client-ca-file=${file("ca.crt", ca.crt)}`,
        `--service-account-key-file=${file("sa.pub", sa.publicKey.export({ type: "spki", format: "pem" }) as string)}`,
        `--service-account-signing-key-file=${file("sa.key", sa.privateKey.export({ type: "pkcs8", format: "pem" }) as string)}`,
        "--service-account-issuer=https://127.0.0.1:6443",
        "--service-cluster-ip-range=10.96.0.0/12",
        "--authorization-mode=Node,RBAC",
        "--allow-privileged=true",
        "--enable-bootstrap-token-auth=true",
        `--cert-dir=${join(dir, "certs")}`,
      ], join(dir, "apiserver.log")),
    );

    const b64 = (s: string) => Buffer.from(s).toString("base64");
    kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:${apiPort}
    certificate-authority-data: ${b64(ca.crt)}
users:
- name: admin@test
  user:
    client-certificate-data: ${b64(admin.crt)}
    client-key-data: ${b64(admin.key)}
contexts:
- name: admin@test
  context: {cluster: test, user: admin@test}
current-context: admin@test
`;
    const readyz = () =>
      new Promise<boolean>((resolve) => {
        const req = request({ host: "127.0.0.1", port: apiPort, path: "/readyz", ca: ca.crt, cert: admin.crt, key: admin.key, timeout: 2000 }, (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        });
        req.on("error", () => resolve(false));
        req.on("timeout", () => req.destroy());
        req.end();
      });
    const deadline = Date.now() + 90_000;
    while (!(await readyz())) {
      for (const p of procs) if (p.exitCode !== null) throw new Error(`${p.spawnfile} exited with ${p.exitCode}; see ${dir}`);
      if (Date.now() > deadline) throw new Error(`kube-apiserver not ready after 90 s; see ${dir}/apiserver.log`);
      await new Promise((r) => setTimeout(r, 250));
    }
    client = kubeApi(kubeconfig);
  }, 120_000);

  afterAll(async () => {
    await client?.close();
    // Only the processes this test started, each by its pid.
    for (const p of procs.reverse()) await stop(p);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("applies every manifest once, tracks it in the inventory, and leaves the cluster alone afterwards", async () => {
    const s = new InMemoryState();
    const rt = startRuntime(s, kubernetesManifestControllers(), 200);
    publishConfig(s, controlPlaneConfig({ machineExtra: PRISM, clusterExtra: INLINE }));
    put(s, SECRETS_NS, KubernetesRootType.type, "k8s", { bootstrapTokenID: "abcdef", bootstrapTokenSecret: "0123456789abcdef" }, "secrets.KubernetesRootController");
    put(s, SECRETS_NS, KubernetesCertsType.type, "k8s-certs", { localhostAdminKubeconfig: kubeconfig, adminKubeconfig: kubeconfig, schedulerKubeconfig: "", controllerManagerKubeconfig: "" }, "secrets.KubernetesController");
    put(s, RUNTIME_NS, ServiceType.type, "etcd", { running: true, healthy: true, unknown: false }, "v1alpha1.ServiceController");
    const status = () => spec<ManifestStatusSpec>(s, CONTROLPLANE_NS, ManifestStatusType.type, "manifests");
    // The custom resource comes before its CRD is served: the first run reports it, a retry creates it.
    await eventually(() => status() !== undefined, 45_000, "ManifestStatus");

    const manifests = s.list(CONTROLPLANE_NS, ManifestType.type).sort((a, b) => (a.metadata.id < b.metadata.id ? -1 : 1));
    expect(status()!.manifestsApplied).toEqual(manifests.map((m) => m.metadata.id));
    expect(status()!.manifestsApplied).toContain("05-flannel");
    expect(status()!.manifestsApplied).toContain("99-widgets");
    const objects = manifests.flatMap((m) => (m.spec as ManifestSpec).items);
    expect(objects.length).toBe(24); // 21 bootstrap objects and the 3 inline ones

    const live = new Map<string, KubeObject>();
    for (const o of objects) {
      const meta = o.metadata as { name: string; namespace?: string };
      const got = await client.get({ apiVersion: o.apiVersion as string, kind: o.kind as string, name: meta.name, namespace: meta.namespace });
      expect(got, `${o.kind}/${meta.name}`).toBeDefined();
      expect(got!.metadata!.annotations?.[INVENTORY_ANNOTATION], `${o.kind}/${meta.name}`).toBe("talos-bootstrap-manifests-inventory");
      const managers = (got!.metadata!.managedFields as { manager: string; operation: string }[]).map((f) => `${f.manager}:${f.operation}`);
      expect(managers, `${o.kind}/${meta.name}`).toContain("talos:Apply");
      live.set(`${o.kind}/${meta.namespace ?? ""}/${meta.name}`, got!);
    }
    const secret = live.get("Secret/kube-system/bootstrap-token-abcdef")!;
    expect(Buffer.from((secret.data as Record<string, string>)["auth-extra-groups"], "base64").toString()).toBe("system:bootstrappers:nodes");
    expect((live.get("Service/kube-system/kube-dns")!.spec as { clusterIP: string }).clusterIP).toBe("10.96.0.10");
    expect((live.get("Widget/widgets/w1")!.spec as { size: number }).size).toBe(3);

    // The inventory ConfigMap: cli-utils keys for exactly these objects (namespaced ones defaulted to `default`).
    const inv = await client.get({ apiVersion: "v1", kind: "ConfigMap", name: "talos-bootstrap-manifests-inventory", namespace: "kube-system" });
    const expected = objects.map((o) => formatObjectRef(objectRef(o))).sort();
    expect(Object.keys(inv!.data as Record<string, string>).sort()).toEqual(expected);
    expect(Object.values(inv!.data as Record<string, string>).every((v) => v === "")).toBe(true);
    expect(expected).toContain("_system__coredns_rbac.authorization.k8s.io_ClusterRole");

    // A second run (a new etcd health event) changes nothing in the cluster.
    const versions = async () => {
      const out: Record<string, string> = {};
      for (const [k, o] of live) {
        const meta = o.metadata!;
        out[k] = (await client.get({ apiVersion: o.apiVersion!, kind: o.kind!, name: meta.name!, namespace: meta.namespace }))?.metadata?.resourceVersion ?? "gone";
      }
      out.inventory = (await client.get({ apiVersion: "v1", kind: "ConfigMap", name: "talos-bootstrap-manifests-inventory", namespace: "kube-system" }))!.metadata!.resourceVersion!;
      return out;
    };
    const before = await versions();
    const runs = () => rt.statuses().find((c) => c.name === "k8s.ManifestApplyController")!.runs;
    const r0 = runs();
    put(s, RUNTIME_NS, ServiceType.type, "etcd", { running: true, healthy: true, unknown: true }, "v1alpha1.ServiceController");
    await eventually(() => runs() > r0 && rt.statuses().find((c) => c.name === "k8s.ManifestApplyController")!.consecutiveFailures === 0, 10_000, "second run");
    expect(await versions()).toEqual(before);
    expect(await applyManifests(client, manifests as never)).toEqual({ created: [], adopted: [] });

    // Deleted by hand: stays deleted (upstream semantics; `talosctl upgrade-k8s` is what re-syncs).
    expect(await client.delete({ apiVersion: "v1", kind: "ConfigMap", name: "coredns", namespace: "kube-system" })).toBe(true);
    const r1 = runs();
    put(s, RUNTIME_NS, ServiceType.type, "etcd", { running: true, healthy: true, unknown: false }, "v1alpha1.ServiceController");
    await eventually(() => runs() > r1, 10_000, "third run");
    expect(await client.get({ apiVersion: "v1", kind: "ConfigMap", name: "coredns", namespace: "kube-system" })).toBeUndefined();

    // cni: none renders no flannel; what was applied stays in the cluster (objects are never deleted here).
    publishConfig(s, controlPlaneConfig({ machineExtra: PRISM, clusterExtra: INLINE }).replace("    serviceSubnets: [10.96.0.0/12]", "    serviceSubnets: [10.96.0.0/12]\n    cni:\n      name: none"));
    await eventually(() => !s.list(CONTROLPLANE_NS, ManifestType.type).some((m) => m.metadata.id === "05-flannel"), 5000, "no flannel manifest");
    await eventually(() => !(status()?.manifestsApplied ?? []).includes("05-flannel"), 10_000, "status without flannel");
    expect(await client.get({ apiVersion: "apps/v1", kind: "DaemonSet", name: "kube-flannel", namespace: "kube-system" })).toBeDefined();
  }, 90_000);
});

function start(bin: string, args: string[], log: string): ChildProcess {
  const out = openSync(log, "w");
  const p = spawn(bin, args, { stdio: ["ignore", out, out] });
  closeSync(out);
  return p;
}

async function stop(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise<void>((r) => p.once("exit", () => r()));
  p.kill("SIGTERM");
  const timer = setTimeout(() => p.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}
