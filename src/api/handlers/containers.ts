/**
 * `talosctl containers / stats / restart`, as upstream's two inspectors:
 *  - the CRI driver (`-k`, namespace k8s.io): the CRI containerd's runtime API — ready pod sandboxes and their
 *    containers, by the ids talosctl shows (`ns/pod`, `ns/pod:container:id`);
 *  - the containerd driver: containerd's own view of a namespace — `system` on the system containerd (machined's
 *    own containers), any other namespace on the CRI containerd where one runs (upstream's choice of socket).
 */
import { ContainerDriver } from "../../machinery/api/gen/common/common_pb.js";
import type { ContainersRequest, RestartRequest, StatsRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import { ApiError, Code } from "../../machinery/errors.js";
import type { ContainerdService, ContainerSummary } from "../../supervisor/index.js";
import { hostFiles } from "../../host/files/index.js";
import { CriInspector } from "../../host/cri/inspector.js";
import { readCgroupUsage } from "../../host/proc/cgroup-usage.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";
import { one } from "../reply.js";

const SYSTEM = "system";
const K8S = "k8s.io";

/** Upstream getContainerInspector's checks and texts: which inspector a request is for. */
function driverOf(namespace: string, driver: ContainerDriver): "cri" | "containerd" {
  if (namespace === "") throw new ApiError(Code.InvalidArgument, "namespace can't be empty");
  if (driver === ContainerDriver.CRI) {
    if (namespace !== K8S) throw new ApiError(Code.Unknown, "CRI inspector is supported only for K8s namespace");
    return "cri";
  }
  if (driver !== ContainerDriver.CONTAINERD) throw new ApiError(Code.InvalidArgument, `unsupported driver "${driver}"`);
  return "containerd";
}

/** The containerd a containerd-driver request reads: the system one for `system`, the CRI one for the rest when it runs. */
export function containerd(deps: ApiDeps, namespace: string, driver: ContainerDriver): ContainerdService {
  driverOf(namespace, driver);
  const services = deps.services;
  const running = (id: string) => (services?.supervisor.info(id)?.state === "Running" ? services.supervisor.service<ContainerdService>(id) : undefined);
  const svc = (namespace !== SYSTEM ? running("cri") : undefined) ?? (services?.supervisor.info("containerd")?.state === "Running" ? services.containerd : undefined);
  if (!svc) throw new ApiError(Code.Unavailable, "containerd is not running on this node");
  return svc;
}

/** A CRI inspector over the CRI containerd; the caller closes it. */
export function criInspector(deps: ApiDeps, namespace: string, driver: ContainerDriver): CriInspector | undefined {
  if (driverOf(namespace, driver) !== "cri") return undefined;
  if (!deps.cri) throw new ApiError(Code.Unavailable, "CRI is not running on this node");
  return new CriInspector(deps.cri());
}

async function withInspector<T>(insp: CriInspector, f: (i: CriInspector) => Promise<T>): Promise<T> {
  try {
    return await f(insp);
  } finally {
    insp.close();
  }
}

/** Upstream lists only containers that have a task. */
async function running(svc: ContainerdService, ns: string): Promise<ContainerSummary[]> {
  return (await svc.listContainers(ns)).filter((c) => c.status !== "");
}

export function containerHandlers(deps: ApiDeps): Handlers {
  const usage = (pid: number) => readCgroupUsage(pid, deps.files ?? hostFiles);
  return {
    Containers: async (req: ContainersRequest, ctx: CallContext) => {
      const insp = criInspector(deps, req.namespace, req.driver);
      if (insp) {
        const pods = await withInspector(insp, (i) => i.pods());
        const containers = pods.flatMap((p) =>
          p.containers.map((c) => ({
            namespace: req.namespace,
            id: c.display,
            internalId: c.id,
            uid: c.uid,
            podId: p.name,
            name: c.name,
            image: c.image,
            pid: c.pid,
            status: c.status,
            networkNamespace: c.networkNamespace,
          })),
        );
        return one(ctx, { containers });
      }
      const list = await running(containerd(deps, req.namespace, req.driver), req.namespace);
      return one(ctx, {
        containers: list.map((c) => ({
          namespace: req.namespace,
          id: c.id,
          internalId: c.id,
          podId: c.id,
          name: c.id,
          image: c.image,
          pid: c.pid,
          status: c.status,
        })),
      });
    },

    Stats: async (req: StatsRequest, ctx: CallContext) => {
      const insp = criInspector(deps, req.namespace, req.driver);
      if (insp) {
        const pods = await withInspector(insp, (i) => i.pods());
        const stats = pods.flatMap((p) =>
          p.containers.flatMap((c) =>
            c.metrics ? [{ namespace: req.namespace, id: c.display, podId: p.name, name: c.name, memoryUsage: c.metrics.memoryUsage, cpuUsage: c.metrics.cpuUsage }] : [],
          ),
        );
        return one(ctx, { stats });
      }
      const list = await running(containerd(deps, req.namespace, req.driver), req.namespace);
      const stats = [];
      for (const c of list) {
        // Upstream reports metrics only for running tasks.
        const u = c.status === "RUNNING" && c.pid > 0 ? await usage(c.pid) : undefined;
        if (u) stats.push({ namespace: req.namespace, id: c.id, podId: c.id, name: c.id, memoryUsage: u.memory, cpuUsage: u.cpu });
      }
      return one(ctx, { stats });
    },

    Restart: async (req: RestartRequest, ctx: CallContext) => {
      const insp = criInspector(deps, req.namespace, req.driver);
      if (insp) {
        await withInspector(insp, async (i) => {
          const c = await i.container(req.id);
          if (!c) throw new ApiError(Code.Unknown, `container ${JSON.stringify(req.id)} not found`);
          // Stopped as upstream does (the kubelet starts it again): a sandbox as a whole, a container with 10 s grace.
          if (c.isPodSandbox) await i.client.stopPodSandbox(c.id);
          else await i.client.stopContainer(c.id, 10);
        });
        return one(ctx, {});
      }
      const svc = containerd(deps, req.namespace, req.driver);
      const found = (await running(svc, req.namespace)).find((c) => c.id === req.id);
      if (!found) throw new ApiError(Code.Unknown, `container ${JSON.stringify(req.id)} not found`);
      // SIGTERM only, as upstream: whoever runs the container (the supervisor, kubelet) starts it again.
      await svc.ctr.kill(req.namespace, req.id, "SIGTERM");
      return one(ctx, {});
    },
  };
}
