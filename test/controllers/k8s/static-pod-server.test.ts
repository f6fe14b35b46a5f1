/** k8s.StaticPodServerController over real HTTP on loopback: the kubelet's view of the static pods. */
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { InMemoryState } from "../../../src/state/inmem.js";
import { K8S_NS, StaticPodType } from "../../../src/machinery/resources/types/k8s.js";
import { StaticPodServerStatusType } from "../../../src/machinery/resources/types/k8s-controlplane.js";
import { readSpec } from "../../../src/machinery/resources/read.js";
import { staticPodServerController } from "../../../src/controllers/k8s/static-pod-server.js";
import { eventually, put, startRuntime } from "../runtime/harness.js";

const podOf = (name: string, image: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: "kube-system", annotations: { "talos.dev/config-version": "1" } },
  spec: { containers: [{ name, image, command: ["/bin/x", "--a=$(POD_IP)"] }], hostNetwork: true },
  status: {},
});

async function get(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url);
  return { status: res.status, text: await res.text() };
}

describe("k8s.StaticPodServerController", () => {
  it("serves every StaticPod as one YAML PodList on 127.0.0.1 and follows changes", async () => {
    const s = new InMemoryState();
    const rt = startRuntime(s, [staticPodServerController()]);
    await eventually(() => readSpec(s, StaticPodServerStatusType, "static-pod-server-status") !== undefined, 5000, "status");
    const url = readSpec(s, StaticPodServerStatusType, "static-pod-server-status")!.url;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(StaticPodServerStatusType.defaultNamespace).toBe(K8S_NS);

    // No pods yet: an empty list, as upstream marshals it.
    expect(await get(url)).toEqual({ status: 200, text: "apiVersion: v1\nitems: null\nkind: PodList\n" });

    put(s, K8S_NS, StaticPodType.type, "kube-scheduler", podOf("kube-scheduler", "sched:1"), "k8s.ControlPlaneStaticPodController");
    put(s, K8S_NS, StaticPodType.type, "kube-apiserver", podOf("kube-apiserver", "api:1"), "k8s.ControlPlaneStaticPodController");
    let list: { kind: string; apiVersion: string; items: ReturnType<typeof podOf>[] } = { kind: "", apiVersion: "", items: [] };
    // Polls the server until `cond` holds for what it serves (the list is rebuilt asynchronously).
    const served = async (cond: () => boolean) => {
      for (let i = 0; i < 500; i++) {
        list = parse((await get(`${url}/any/path`)).text);
        if (cond()) return;
        await new Promise((r) => setTimeout(r, 10));
      }
      throw new Error(`timed out; served ${JSON.stringify(list)}`);
    };
    await served(() => (list.items?.length ?? 0) === 2);
    expect(list.kind).toBe("PodList");
    expect(list.apiVersion).toBe("v1");
    // Sorted by resource id; each item is the pod manifest itself.
    expect(list.items).toEqual([podOf("kube-apiserver", "api:1"), podOf("kube-scheduler", "sched:1")]);

    put(s, K8S_NS, StaticPodType.type, "kube-apiserver", podOf("kube-apiserver", "api:2"), "k8s.ControlPlaneStaticPodController");
    await served(() => list.items[0].spec.containers[0].image === "api:2");
    expect(list.items[0].spec.containers[0].image).toBe("api:2");

    s.destroy({ namespace: K8S_NS, type: StaticPodType.type, id: "kube-apiserver" }, "k8s.ControlPlaneStaticPodController");
    await served(() => list.items.length === 1);
    expect(list.items.map((p) => p.metadata.name)).toEqual(["kube-scheduler"]);

    // The URL stays the same for the life of the runtime; stopping it closes the server.
    expect(readSpec(s, StaticPodServerStatusType, "static-pod-server-status")!.url).toBe(url);
    await rt.stop();
    await expect(fetch(url)).rejects.toThrow();
  });
});
