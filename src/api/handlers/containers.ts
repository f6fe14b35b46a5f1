/**
 * `talosctl containers / stats / restart`: containers of our containerd, in the namespace asked for.
 * Both drivers read the same daemon (there is no separate CRI socket in this agent).
 */
import { ContainerDriver } from "../../machinery/api/gen/common/common_pb.js";
import type { ContainersRequest, RestartRequest, StatsRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import { ApiError, Code } from "../../machinery/errors.js";
import type { ContainerdService, ContainerSummary } from "../../supervisor/index.js";
import { hostFiles } from "../../host/files/index.js";
import { readCgroupUsage } from "../../host/proc/cgroup-usage.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";
import { one } from "../reply.js";

/** Upstream getContainerInspector's checks and texts, then our running containerd. */
export function containerd(deps: ApiDeps, namespace: string, driver: ContainerDriver): ContainerdService {
  if (namespace === "") throw new ApiError(Code.InvalidArgument, "namespace can't be empty");
  if (driver === ContainerDriver.CRI && namespace !== "k8s.io") throw new ApiError(Code.Unknown, "CRI inspector is supported only for K8s namespace");
  if (driver !== ContainerDriver.CRI && driver !== ContainerDriver.CONTAINERD) throw new ApiError(Code.InvalidArgument, `unsupported driver "${driver}"`);
  const svc = deps.services?.containerd;
  if (!svc || deps.services?.supervisor.info("containerd")?.state !== "Running") {
    throw new ApiError(Code.Unavailable, "containerd is not running on this node");
  }
  return svc;
}

/** Upstream lists only containers that have a task. */
async function running(svc: ContainerdService, ns: string): Promise<ContainerSummary[]> {
  return (await svc.listContainers(ns)).filter((c) => c.status !== "");
}

export function containerHandlers(deps: ApiDeps): Handlers {
  const usage = (pid: number) => readCgroupUsage(pid, deps.files ?? hostFiles);
  return {
    Containers: async (req: ContainersRequest, ctx: CallContext) => {
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
      const svc = containerd(deps, req.namespace, req.driver);
      const found = (await running(svc, req.namespace)).find((c) => c.id === req.id);
      if (!found) throw new ApiError(Code.Unknown, `container ${JSON.stringify(req.id)} not found`);
      // SIGTERM only, as upstream: whoever runs the container (the supervisor, kubelet) starts it again.
      await svc.ctr.kill(req.namespace, req.id, "SIGTERM");
      return one(ctx, {});
    },
  };
}
