/**
 * The etcd mutex `talos:v1:manifestApplyMutex` against a real etcd (Debian's 3.4, mutual TLS, a free loopback port):
 * withLock serialises holders on upstream's keys (`<name>/<lease hex>`), a waiter that gives up leaves nothing
 * queued, and k8s.ManifestApplyController applies nothing while another control plane holds the mutex, then applies
 * once it is released. Needs etcd and openssl (no root).
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noCgroups } from "../../../src/host/cgroups.js";
import { CONTROLPLANE_NS, ManifestStatusType, ManifestType } from "../../../src/machinery/resources/types/k8s-manifests.js";
import { RUNTIME_NS, ServiceType } from "../../../src/machinery/resources/types/runtime.js";
import { EtcdCertsType, EtcdRootType, KubernetesCertsType, SECRETS_NS } from "../../../src/machinery/resources/types/secrets.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { MANIFEST_APPLY_MUTEX, manifestApplyController } from "../../../src/controllers/k8s/manifest-apply.js";
import { EtcdClient } from "../../../src/supervisor/etcd/client.js";
import { withLock } from "../../../src/supervisor/etcd/lock.js";
import { LogManager } from "../../../src/supervisor/logs.js";
import { EtcdService, type EtcdPki } from "../../../src/supervisor/services/etcd.js";
import { Supervisor } from "../../../src/supervisor/supervisor.js";
import { FakeKubernetes } from "../../helpers/fake-kubernetes.js";
import { freePort, killByMarker, makeEtcdPki, missing, tempDir, waitUntil } from "../../supervisor/helpers.js";
import { put, settle, spec, startRuntime } from "../runtime/harness.js";

const skip = missing({ bins: ["etcd", "openssl"] });
if (skip) console.log(`skipping etcd mutex tests: ${skip}`);

describe.skipIf(!!skip)("the manifest apply mutex in etcd", () => {
  let dir: string;
  let pki: EtcdPki;
  let sup: Supervisor;
  let endpoint: string;
  const clients: EtcdClient[] = [];
  const client = () => {
    const c = new EtcdClient(endpoint, { ca: pki.ca, cert: pki.clientCert, key: pki.clientKey });
    clients.push(c);
    return c;
  };
  const held = () => client().keys(`${MANIFEST_APPLY_MUTEX}/`);

  beforeAll(async () => {
    dir = tempDir("etcd-lock");
    mkdirSync(join(dir, "pki"));
    pki = makeEtcdPki(join(dir, "pki"));
    const [clientPort, peerPort] = [await freePort(), await freePort()];
    endpoint = `https://127.0.0.1:${clientPort}`;
    sup = new Supervisor({ cgroups: noCgroups, logs: new LogManager(join(dir, "logs")) });
    const etcd = new EtcdService({
      stateDir: join(dir, "n1"),
      spec: () => ({ name: "n1", advertisedAddresses: ["127.0.0.1"], listenPeerAddresses: ["127.0.0.1"], listenClientAddresses: ["127.0.0.1"], extraArgs: {} }),
      pki,
      clientPort,
      peerPort,
      extraArgs: { "heartbeat-interval": "10", "election-timeout": "100" },
      health: { initialDelayMs: 50, periodMs: 200, timeoutMs: 3000 },
    });
    sup.load(etcd);
    await etcd.bootstrap(sup, { machineType: "init" });
    await sup.waitFor("etcd", "up", AbortSignal.timeout(30_000));
  });

  afterAll(async () => {
    for (const c of clients) c.close();
    await sup?.shutdown();
    const stray = killByMarker(dir);
    rmSync(dir, { recursive: true, force: true });
    expect(stray).toEqual([]);
  });

  it("serialises holders on upstream's keys and frees the lock with the lease", async () => {
    const order: string[] = [];
    let releaseFirst!: () => void;
    const firstHolds = new Promise<void>((r) => (releaseFirst = r));
    let firstKeys: string[] = [];
    const first = withLock(client(), MANIFEST_APPLY_MUTEX, async () => {
      order.push("first in");
      firstKeys = await held();
      await firstHolds;
      order.push("first out");
    });
    await waitUntil(() => order.includes("first in"), 10_000, "first holder");
    const second = withLock(client(), MANIFEST_APPLY_MUTEX, async () => {
      order.push("second in");
    });
    try {
      // The second queues behind the first: its key exists, its function does not run.
      await waitUntil(async () => (await held()).length === 2, 10_000, "second waiter queued");
      expect(order).toEqual(["first in"]);
      expect(firstKeys).toHaveLength(1);
      // The lease id in hex without padding, as etcd's concurrency.Mutex (`%x`) writes it: 15 digits 1 time in 16.
      expect(firstKeys[0]).toMatch(new RegExp(`^${MANIFEST_APPLY_MUTEX}/[1-9a-f][0-9a-f]{0,15}$`));
    } finally {
      // A failed check must not leave the lock held for the tests after this one.
      releaseFirst();
    }
    await Promise.all([first, second]);
    expect(order).toEqual(["first in", "first out", "second in"]);
    expect(await held()).toEqual([]);
  });

  it("a waiter that gives up leaves no key queued; the holder is unaffected", async () => {
    let release!: () => void;
    const holding = new Promise<void>((r) => (release = r));
    let inside = false;
    const holder = withLock(client(), MANIFEST_APPLY_MUTEX, async () => {
      inside = true;
      await holding;
    });
    await waitUntil(() => inside, 10_000, "holder");
    const ac = new AbortController();
    const waiter = withLock(client(), MANIFEST_APPLY_MUTEX, async () => "ran", { signal: ac.signal }).catch((e: Error) => e);
    await waitUntil(async () => (await held()).length === 2, 10_000, "waiter queued");
    ac.abort(new Error("gave up"));
    const err = await waiter;
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe(`error acquiring mutex for key ${MANIFEST_APPLY_MUTEX}: gave up`);
    await waitUntil(async () => (await held()).length === 1, 10_000, "waiter's key gone");
    release();
    await holder;
    expect(await held()).toEqual([]);
  });

  it("ManifestApplyController applies nothing while another node holds the mutex", async () => {
    const api = new FakeKubernetes();
    const s = new InMemoryState();
    startRuntime(s, [manifestApplyController({ connect: () => api.client(), etcdEndpoint: endpoint })]);
    const pair = (crt: string, key: string) => ({ crt, key });
    put(s, SECRETS_NS, EtcdRootType.type, "etcd", { etcdCA: pair(pki.ca, "") }, "secrets.EtcdRootController");
    put(
      s,
      SECRETS_NS,
      EtcdCertsType.type,
      "etcd",
      { etcd: pair(pki.serverCert, pki.serverKey), etcdPeer: pair(pki.peerCert, pki.peerKey), etcdAdmin: pair(pki.clientCert, pki.clientKey), etcdAPIServer: pair(pki.clientCert, pki.clientKey) },
      "secrets.EtcdCertSANController",
    );
    put(s, CONTROLPLANE_NS, ManifestType.type, "00-a", { items: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "default" } }] }, "k8s.ManifestController");
    put(s, SECRETS_NS, KubernetesCertsType.type, "k8s-certs", { localhostAdminKubeconfig: "kubeconfig", adminKubeconfig: "", schedulerKubeconfig: "", controllerManagerKubeconfig: "" }, "secrets.KubernetesController");

    // Another control plane holds the mutex while this one's etcd becomes healthy.
    let release!: () => void;
    const other = withLock(client(), MANIFEST_APPLY_MUTEX, () => new Promise<void>((r) => (release = r)));
    await waitUntil(async () => (await held()).length === 1, 10_000, "the other node's lock");
    put(s, RUNTIME_NS, ServiceType.type, "etcd", { running: true, healthy: true, unknown: false }, "v1alpha1.ServiceController");
    await waitUntil(async () => (await held()).length === 2, 10_000, "this node queued on the mutex");
    await settle();
    expect(api.clientsOpened).toBe(0);
    expect(spec(s, CONTROLPLANE_NS, ManifestStatusType.type, "manifests")).toBeUndefined();

    release();
    await other;
    await waitUntil(() => spec(s, CONTROLPLANE_NS, ManifestStatusType.type, "manifests") !== undefined, 10_000, "applied after release");
    expect(api.applied()).toEqual(["v1/ConfigMap/default/a"]);
    expect(await held()).toEqual([]);
  });
});
