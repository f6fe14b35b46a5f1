/**
 * Kubernetes in the VM from the host: the kubeconfig from the node's Kubeconfig API (its server rewritten to the host
 * port QEMU forwards to the guest's 6443; the API server's certificate names 127.0.0.1), a @kubernetes/client-node
 * client on it, and the figures the e2e prints (what runs, resident memory per process through the Processes API).
 */
import { gunzipSync } from "node:zlib";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import * as k8s from "@kubernetes/client-node";
import { parse, stringify } from "yaml";
import { MachineService } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { DataSchema } from "../../src/machinery/api/gen/common/common_pb.js";
import { applyPatches, parsePatch } from "../../src/machinery/config/index.js";
import type { TestClient } from "../helpers/client.js";

/** The guest sees the host as 10.0.2.2: `make registry` (127.0.0.1:5000, the component images) is there. */
export const GUEST_KUBE_REGISTRY = "10.0.2.2:5000";

/**
 * Every image pull of the node goes to the loopback registry (as test/helpers/sandbox.ts mirrorsPatch); registry.local
 * names the installer there.
 */
export function withMirrors(config: string, registry = GUEST_KUBE_REGISTRY): string {
  const ep = `[http://${registry}]`;
  const patch = `machine:\n  registries:\n    mirrors:\n      registry.k8s.io:\n        endpoints: ${ep}\n      ghcr.io:\n        endpoints: ${ep}\n      docker.io:\n        endpoints: ${ep}\n      registry.local:\n        endpoints: ${ep}\n`;
  return applyPatches(config, [parsePatch(patch)]);
}

/** Why the Kubernetes steps cannot run: the component images are not in the loopback registry. */
export async function missingKubeImages(): Promise<string | undefined> {
  for (const repo of ["siderolabs/kubelet", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "coredns/coredns", "siderolabs/flannel", "pause"]) {
    const ok = await fetch(`http://127.0.0.1:5000/v2/${repo}/tags/list`).then(
      (r) => r.ok,
      () => false,
    );
    if (!ok) return `image ${repo} is not in the loopback registry 127.0.0.1:5000 (make kube-images && make registry)`;
  }
  return undefined;
}

/** The admin kubeconfig the node hands out (talosctl kubeconfig), pointed at `https://127.0.0.1:<hostPort>`. */
export async function hostKubeconfig(c: TestClient, hostPort: number): Promise<{ text: string; server: string }> {
  const chunks = await c.stream(MachineService, "Kubeconfig", EmptySchema, DataSchema, {}, { deadlineMs: 60_000 });
  const tar = gunzipSync(Buffer.concat(chunks.map((x) => Buffer.from(x.bytes))));
  const size = parseInt(tar.subarray(124, 136).toString(), 8);
  const doc = parse(tar.subarray(512, 512 + size).toString()) as { clusters: Array<{ cluster: { server: string } }> };
  const server = doc.clusters[0].cluster.server;
  for (const cl of doc.clusters) cl.cluster.server = `https://127.0.0.1:${hostPort}`;
  return { text: stringify(doc), server };
}

export function kubeApi(kubeconfig: string): { core: k8s.CoreV1Api; apps: k8s.AppsV1Api } {
  const kc = new k8s.KubeConfig();
  kc.loadFromString(kubeconfig);
  return { core: kc.makeApiClient(k8s.CoreV1Api), apps: kc.makeApiClient(k8s.AppsV1Api) };
}

export function nodeReady(n: k8s.V1Node): boolean {
  return n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

export function podReady(p: k8s.V1Pod): boolean {
  return p.status?.phase === "Running" && (p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false);
}

/** `kubectl get pods -n kube-system`, one line per pod. */
export function podTable(pods: k8s.V1Pod[]): string {
  return pods
    .map((p) => {
      const cs = p.status?.containerStatuses ?? [];
      const ready = `${cs.filter((c) => c.ready).length}/${cs.length || p.spec?.containers.length || 0}`;
      const restarts = cs.reduce((n, c) => n + c.restartCount, 0);
      return `${p.metadata?.name} ${ready} ${p.status?.phase} restarts=${restarts}`;
    })
    .join("\n");
}

/**
 * Why pods are not ready: for each, its last container log lines and its Warning events (failed readiness probes
 * say what the probe got). For the failure message of a wait on kube-system.
 */
export async function notReadyDetails(core: k8s.CoreV1Api, pods: k8s.V1Pod[], alsoPrefixes: string[] = [], namespace = "kube-system"): Promise<string> {
  const out: string[] = [];
  // Also the pods named by prefix (kube-proxy: a service address that does not answer starts there).
  for (const p of pods.filter((x) => !podReady(x) || alsoPrefixes.some((a) => x.metadata?.name?.startsWith(a)))) {
    const name = p.metadata?.name ?? "";
    for (const c of p.spec?.containers ?? []) {
      const log = await core.readNamespacedPodLog({ name, namespace, container: c.name, tailLines: 15 }).catch((e: Error) => `(no log: ${e.message})`);
      out.push(`--- ${name}/${c.name} log:\n${String(log).trimEnd()}`);
    }
    const events = await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` }).catch(() => undefined);
    for (const e of (events?.items ?? []).filter((x) => x.type === "Warning").slice(-5)) out.push(`--- ${name} event: ${e.reason}: ${e.message} (x${e.count ?? 1})`);
  }
  return out.join("\n");
}

/** Resident memory (MiB) of machined and of each component, from the Processes API (talosctl processes). */
export async function componentRss(c: TestClient): Promise<Record<string, number>> {
  const r = await c.unary(MachineService, "Processes", EmptySchema, m.ProcessesResponseSchema, {}, { deadlineMs: 60_000 });
  const names = ["machined", "containerd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "etcd", "kube-proxy", "flanneld", "coredns"];
  const out: Record<string, number> = {};
  for (const p of r.messages[0].processes) {
    const args = p.args || p.command;
    // machined is node running the bundle; containerd runs twice (system and CRI) and the shims are counted apart.
    let name = /machined\.(c|m)js|^\/init/.test(args) ? "machined" : names.find((n) => p.command === n || p.executable.endsWith(`/${n}`));
    if (!name && p.command.startsWith("containerd-shim")) name = "containerd-shim (all)";
    if (name === "containerd") name = /\/etc\/cri\//.test(args) ? "containerd (cri)" : "containerd (system)";
    if (!name) continue;
    out[name] = Math.round(((out[name] ?? 0) + Number(p.residentMemory) / 2 ** 20) * 10) / 10;
  }
  return out;
}
