/**
 * The CRI view of the node's pods, as upstream's CRI inspector builds it for `talosctl containers -k`, `stats -k`,
 * `logs -k` and `restart -k`: every ready pod sandbox is listed as an entry of its own (id `<namespace>/<pod>`,
 * its pause process's pid), followed by its containers (id `<namespace>/<pod>:<container>:<first 12 of the
 * container id>`), with image names resolved from the runtime's image list, the pid from the runtime's verbose
 * status, and where the kubelet writes the container's log.
 *
 * A container is looked up by the same ids talosctl shows: `ns/pod` is the sandbox, `ns/pod:name` the container of
 * that name, `ns/pod:name:<id prefix>` the one whose id contains the prefix. Where the kubelet keeps an exited
 * attempt next to the restarted one, `ns/pod:name` means the latest attempt (upstream takes whichever the runtime
 * lists first, which may be the dead one).
 */
import { ContainerState, PodSandboxState, type Container, type PodSandbox } from "../../machinery/api/gen/cri/runtime/v1/api_pb.js";
import { ApiError, Code } from "../../machinery/errors.js";
import type { CriClient } from "./client.js";

export interface CriContainer {
  /** The id talosctl shows and asks for. */
  display: string;
  name: string;
  /** The runtime's id. */
  id: string;
  uid: string;
  /** `<namespace>/<pod>`. */
  podName: string;
  image: string;
  digest: string;
  status: string;
  restartCount: string;
  /** The CRI log file (absolute); "" for a sandbox. */
  logPath: string;
  pid: number;
  isPodSandbox: boolean;
  networkNamespace: string;
  metrics?: { memoryUsage: bigint; cpuUsage: bigint };
}

export interface CriPod {
  name: string;
  /** The sandbox first, then its containers. */
  containers: CriContainer[];
}

const POD_NAME = "io.kubernetes.pod.name";
const POD_NAMESPACE = "io.kubernetes.pod.namespace";
const CONTAINER_NAME = "io.kubernetes.container.name";

export class CriInspector {
  constructor(readonly client: CriClient) {}

  close(): void {
    this.client.close();
  }

  /** Ready pods with every container the runtime has for them (running or not). */
  async pods(): Promise<CriPod[]> {
    const [sandboxes, containers, stats, images] = await Promise.all([
      this.client.listPodSandbox({ state: { state: PodSandboxState.SANDBOX_READY } }),
      this.client.listContainers({}),
      this.client.listContainerStats(),
      this.images(),
    ]);
    const metrics = new Map(stats.map((s) => [s.attributes?.id ?? "", s]));
    const pods: CriPod[] = [];
    const byId = new Map<string, CriPod>();
    for (const sb of sandboxes) {
      const pod = await gone(this.buildPod(sb));
      if (!pod) continue;
      const name = images.get(pod.containers[0].digest);
      if (name) pod.containers[0].image = name;
      pods.push(pod);
      byId.set(sb.id, pod);
    }
    for (const c of containers) {
      const pod = byId.get(c.podSandboxId);
      // A container of a sandbox that is not ready (being torn down): not shown, as upstream.
      if (!pod) continue;
      const ctr = await gone(this.buildContainer(c));
      if (!ctr) continue;
      const name = images.get(ctr.digest);
      if (name) ctr.image = name;
      const m = metrics.get(ctr.id);
      if (m) ctr.metrics = { memoryUsage: m.memory?.workingSetBytes?.value ?? 0n, cpuUsage: m.cpu?.usageCoreNanoSeconds?.value ?? 0n };
      pod.containers.push(ctr);
    }
    return pods;
  }

  /** The container (or sandbox) a talosctl id names; undefined when there is none. */
  async container(id: string): Promise<CriContainer | undefined> {
    const { namespace, pod, name, containerId } = parseContainerId(id);
    if (pod === "") return undefined;
    if (name === "") {
      const sandboxes = await this.client.listPodSandbox({
        state: { state: PodSandboxState.SANDBOX_READY },
        labelSelector: { [POD_NAME]: pod, [POD_NAMESPACE]: namespace },
      });
      return sandboxes.length ? (await this.buildPod(sandboxes[0])).containers[0] : undefined;
    }
    const containers = await this.client.listContainers({ labelSelector: { [POD_NAME]: pod, [POD_NAMESPACE]: namespace, [CONTAINER_NAME]: name } });
    if (containers.length === 0) return undefined;
    if (containerId === "") return this.buildContainer(latest(containers));
    const found = containers.find((c) => c.id.includes(containerId));
    if (!found) throw new Error(`container ${JSON.stringify(id)} not found`);
    return this.buildContainer(found);
  }

  /** Image id → its first tag. */
  private async images(): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const img of await this.client.listImages()) if (img.repoTags.length > 0) out.set(img.id, img.repoTags[0]);
    return out;
  }

  private async buildPod(sb: PodSandbox): Promise<CriPod> {
    const st = await this.client.podSandboxStatus(sb.id, true);
    const name = `${sb.metadata?.namespace ?? ""}/${sb.metadata?.name ?? ""}`;
    const entry: CriContainer = {
      display: name,
      name,
      id: sb.id,
      uid: sb.metadata?.uid ?? "",
      podName: name,
      image: "",
      digest: "",
      status: PodSandboxState[st.status?.state ?? PodSandboxState.SANDBOX_NOTREADY] ?? "",
      restartCount: "",
      logPath: "",
      pid: 0,
      isPodSandbox: true,
      networkNamespace: "",
      // A sandbox is taken to use nothing.
      metrics: { memoryUsage: 0n, cpuUsage: 0n },
    };
    const info = verboseInfo(st.info);
    if (info) {
      if (typeof info.pid === "number") entry.pid = info.pid;
      if (typeof info.image === "string") entry.image = entry.digest = info.image;
      const namespaces = (info.runtimeSpec as { linux?: { namespaces?: { type?: string; path?: string }[] } } | undefined)?.linux?.namespaces ?? [];
      const netns = namespaces.find((n) => n.type === "network" && typeof n.path === "string");
      if (netns?.path) entry.networkNamespace = netns.path.slice(netns.path.lastIndexOf("/") + 1);
    }
    return { name, containers: [entry] };
  }

  private async buildContainer(c: Container): Promise<CriContainer> {
    const st = await this.client.containerStatus(c.id, true);
    const podName = `${c.labels[POD_NAMESPACE] ?? ""}/${c.labels[POD_NAME] ?? ""}`;
    const name = c.metadata?.name ?? "";
    const info = verboseInfo(st.info);
    return {
      display: `${podName}:${name}:${c.id.slice(0, 12)}`,
      name,
      id: c.id,
      uid: "",
      podName,
      image: c.imageRef,
      digest: c.imageRef,
      status: ContainerState[c.state] ?? "",
      restartCount: c.annotations["io.kubernetes.container.restartCount"] ?? "",
      logPath: st.status?.logPath ?? "",
      pid: typeof info?.pid === "number" ? info.pid : 0,
      isPodSandbox: false,
      networkNamespace: "",
    };
  }
}

/** The latest attempt (then: a running one, the newest). */
function latest(containers: Container[]): Container {
  const rank = (c: Container) => [c.metadata?.attempt ?? 0, c.state === ContainerState.CONTAINER_RUNNING ? 1 : 0, Number(c.createdAt)];
  return containers.reduce((best, c) => {
    const [a, b] = [rank(c), rank(best)];
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] > b[i] ? c : best;
    return best;
  });
}

/** Undefined when what is being looked at went away between the list and its status (pods come and go). */
async function gone<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof ApiError && e.code === Code.NotFound) return undefined;
    throw e;
  }
}

/** `ns/pod`, `ns/pod:name` or `ns/pod:name:id`; anything without a slash names nothing here. */
export function parseContainerId(id: string): { namespace: string; pod: string; name: string; containerId: string } {
  const slash = id.indexOf("/");
  if (slash < 0) return { namespace: "", pod: "", name: id, containerId: "" };
  const namespace = id.slice(0, slash);
  const rest = id.slice(slash + 1);
  const c1 = rest.indexOf(":");
  if (c1 < 0) return { namespace, pod: rest, name: "", containerId: "" };
  const pod = rest.slice(0, c1);
  const tail = rest.slice(c1 + 1);
  const c2 = tail.indexOf(":");
  if (c2 < 0) return { namespace, pod, name: tail, containerId: "" };
  return { namespace, pod, name: tail.slice(0, c2), containerId: tail.slice(c2 + 1) };
}

/** The runtime's verbose `info` JSON (containerd: pid, image, runtimeSpec, ...), or undefined. */
function verboseInfo(info: Record<string, string> | undefined): Record<string, unknown> | undefined {
  const text = info?.info;
  if (!text) return undefined;
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === "object" && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
