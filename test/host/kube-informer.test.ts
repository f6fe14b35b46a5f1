/**
 * The list-then-watch loop over the in-memory API: the first list, changes as they happen, a watch the server
 * ends (resumed without a new list), an outage (reported, then recovered by a fresh list), an expired version
 * (relisted), and stop() leaving no watch open. Also the API's own selector filtering and the real client's
 * error texts where no server is needed.
 */
import net from "node:net";
import { describe, expect, it } from "vitest";
import { forcedServer, kubeApi } from "../../src/host/kube/api.js";
import { startInformer } from "../../src/host/kube/informer.js";
import { MemoryKubeApi } from "../../src/host/kube/memory.js";
import { NODES, PODS, type NodeObject, type PodObject } from "../../src/machinery/kubernetes/objects.js";

const eventually = async (cond: () => boolean, what: string, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

const node = (name: string, ready = "True"): NodeObject => ({ metadata: { name }, status: { conditions: [{ type: "Ready", status: ready }] } });

describe("MemoryKubeApi", () => {
  it("lists by namespace and selectors, with increasing resource versions", async () => {
    const api = new MemoryKubeApi();
    api.put(PODS, { metadata: { name: "p1", namespace: "kube-system", labels: { "k8s-app": "kube-dns" } } });
    api.put(PODS, { metadata: { name: "p2", namespace: "kube-system", labels: { "k8s-app": "kube-proxy" } } });
    api.put(PODS, { metadata: { name: "p3", labels: { "k8s-app": "kube-dns" } } });
    const dns = await api.list<PodObject>(PODS, { namespace: "kube-system", labelSelector: "k8s-app=kube-dns" });
    expect(dns.items.map((p) => p.metadata?.name)).toEqual(["p1"]);
    expect((await api.list(PODS, { labelSelector: "k8s-app=kube-dns" })).items.map((p) => p.metadata?.namespace)).toEqual(["kube-system", "default"]);
    const v1 = Number(dns.items[0].metadata?.resourceVersion);
    const v2 = Number(api.put<PodObject>(PODS, { metadata: { name: "p1", namespace: "kube-system" } }).metadata?.resourceVersion);
    expect(v2).toBeGreaterThan(v1);
    api.down(new Error("apiserver is down"));
    await expect(api.list(NODES)).rejects.toThrow("apiserver is down");
  });
});

describe("startInformer", () => {
  it("reports the list, every change, resumes ended watches and recovers from outages and expiry", async () => {
    const api = new MemoryKubeApi();
    api.put(NODES, node("n1"));
    api.put(NODES, node("other"));
    const seen: string[][] = [];
    const errors: string[] = [];
    const inf = startInformer<NodeObject>(
      api,
      NODES,
      { fieldSelector: "metadata.name=n1" },
      {
        onChange: (objs) => seen.push(objs.map((n) => `${n.metadata?.name}:${n.status?.conditions?.[0].status}`)),
        onError: (e) => errors.push(e.message),
      },
      { retryMs: 5 },
    );
    await eventually(() => inf.synced && api.openWatches === 1, "first list and watch");
    expect(seen).toEqual([["n1:True"]]);

    api.put(NODES, node("n1", "False"));
    api.put(NODES, node("other", "False")); // not selected: no event
    await eventually(() => seen.length === 2, "the change");
    expect(seen[1]).toEqual(["n1:False"]);

    const lists = api.requests;
    api.endWatches();
    await eventually(() => api.openWatches === 1, "watch resumed");
    api.put(NODES, node("n1", "True"));
    await eventually(() => seen.length === 3, "change after resume");
    // Resumed from the last version: one new watch, no new list.
    expect(api.requests).toBe(lists + 1);

    api.down(new Error('Get "https://127.0.0.1:6443/api/v1/nodes": dial tcp 127.0.0.1:6443: connect: connection refused'));
    await eventually(() => errors.length >= 2, "the outage reported");
    expect(inf.synced).toBe(false);
    expect(errors[0]).toContain("connect: connection refused");
    api.remove(NODES, "n1");
    api.up();
    await eventually(() => inf.synced && seen.at(-1)?.length === 0, "fresh list after the outage");

    api.put(NODES, node("n1"));
    await eventually(() => seen.at(-1)?.[0] === "n1:True", "added again");
    const before = errors.length;
    api.compact();
    await eventually(() => errors.length > before && inf.synced && api.openWatches === 1, "relist after 410");
    expect(errors.at(-1)).toBe("too old resource version");

    await inf.stop();
    expect(api.openWatches).toBe(0);
    const count = seen.length;
    api.put(NODES, node("n1", "False"));
    await new Promise((r) => setTimeout(r, 20));
    expect(seen.length).toBe(count);
  });
});

describe("kubeApi (real client)", () => {
  const kubeconfig = (server: string) => `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "${server}", insecure-skip-tls-verify: true } }]
users: [{ name: u, user: { token: abc } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;

  it("names an unreachable server as client-go does", async () => {
    // A port nobody listens on: bind one, close it.
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const api = kubeApi(kubeconfig(`https://127.0.0.1:${port}`));
    await expect(api.list(NODES)).rejects.toThrow(`Get "https://127.0.0.1:${port}/api/v1/nodes": dial tcp 127.0.0.1:${port}: connect: connection refused`);
    await api.close();
    await expect(api.list(NODES)).rejects.toThrow("client is closed");
  });

  it("rejects unusable kubeconfigs and forces endpoints like upstream", () => {
    expect(() => kubeApi("clusters: [")).toThrow(/^invalid kubeconfig:/);
    expect(() => kubeApi("apiVersion: v1\nkind: Config\n")).toThrow("invalid kubeconfig: the current context names no cluster with a server");
    expect(kubeApi(kubeconfig("https://10.5.0.2:6443"), { forceEndpoint: "https://10.9.9.9" }).server).toBe("https://10.9.9.9:6443");
    expect(forcedServer("10.9.9.9:7445")).toBe("https://10.9.9.9:7445");
    expect(forcedServer("fd00::1")).toBe("https://[fd00::1]:6443");
    expect(forcedServer("[fd00::1]:443")).toBe("https://[fd00::1]:443");
  });
});
