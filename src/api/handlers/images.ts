/**
 * machine.ImageService/Pull: pulls into containerd (or our registry cache when containerd is not running) and
 * streams per-layer progress, then the pinned `name` (repository@digest), as Talos does. List and Remove work
 * on containerd's image store in the requested namespace. All three go to the node's image service
 * (lifecycle/images/manager.ts), which does not depend on an install target: a node that cannot install
 * still lists, pulls and removes images.
 */
import { ContainerDriver, ContainerdNamespace, type ContainerdInstance } from "../../machinery/api/gen/common/common_pb.js";
import {
  ImageServicePullLayerProgress_Status as PullStatus,
  type ImageServiceListRequest,
  type ImageServicePullRequest,
  type ImageServiceRemoveRequest,
} from "../../machinery/api/gen/machine/image_pb.js";
import { ApiError, Code, invalidArgument, unimplemented } from "../../machinery/errors.js";
import type { ImageManager } from "../../lifecycle/images/manager.js";
import type { InstallManager } from "../../lifecycle/install/manager.js";
import type { PullProgress } from "../../lifecycle/images/pull.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";

/** Upstream's ContainerdInstanceHelper checks and texts; returns the containerd namespace name. */
export function containerdNamespace(inst: ContainerdInstance | undefined): string {
  const driver = inst?.driver ?? ContainerDriver.CONTAINERD;
  if (driver !== ContainerDriver.CONTAINERD && driver !== ContainerDriver.CRI) throw invalidArgument(`invalid containerd driver ${driver}`);
  const ns = inst?.namespace ?? ContainerdNamespace.NS_UNKNOWN;
  if (ns !== ContainerdNamespace.NS_SYSTEM && ns !== ContainerdNamespace.NS_CRI) throw invalidArgument(`invalid containerd namespace ${ContainerdNamespace[ns] ?? ns}`);
  if (driver === ContainerDriver.CONTAINERD && ns === ContainerdNamespace.NS_CRI) throw invalidArgument("cannot use CRI namespace with containerd driver");
  return ns === ContainerdNamespace.NS_CRI ? "k8s.io" : "system";
}

/** The install manager, for the lifecycle/upgrade/reset/META handlers. */
export function installManager(deps: ApiDeps): InstallManager {
  if (!deps.install) throw unimplemented("installation is not available on this node");
  return deps.install;
}

/** The node's image service; the install manager's own while the wiring passes only that. */
function imageManager(deps: ApiDeps): ImageManager {
  const images = deps.images ?? deps.install?.images;
  if (!images) throw unimplemented("the image service is not available on this node");
  return images;
}

const STATUS: Record<PullProgress["status"], PullStatus> = {
  downloading: PullStatus.DOWNLOADING,
  "download-complete": PullStatus.DOWNLOAD_COMPLETE,
  "already-exists": PullStatus.ALREADY_EXISTS,
};

export function imageHandlers(deps: ApiDeps): Handlers {
  return {
    List: async (req: ImageServiceListRequest, send) => {
      const ns = containerdNamespace(req.containerd);
      for (const img of await imageManager(deps).list(ns)) {
        const ms = img.createdAt?.getTime();
        await send({
          name: img.name,
          digest: img.digest,
          size: BigInt(img.size),
          labels: img.labels,
          createdAt: ms === undefined ? undefined : { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1e6 },
        });
      }
    },
    Remove: async (req: ImageServiceRemoveRequest) => {
      const ns = containerdNamespace(req.containerd);
      if (!req.imageRef) throw invalidArgument("image reference is required");
      await imageManager(deps).remove(ns, req.imageRef);
      return {};
    },
    Pull: async (req: ImageServicePullRequest, send, ctx: CallContext) => {
      const ns = containerdNamespace(req.containerd);
      const mgr = imageManager(deps);
      const pending: Promise<void>[] = [];
      let pulled;
      try {
        pulled = await mgr.pull(
          req.imageRef,
          ns,
          (p) => {
            const ms = p.elapsedMs;
            pending.push(
              send({
                response: {
                  case: "pullProgress",
                  value: {
                    layerId: p.layerId,
                    progress: { status: STATUS[p.status], offset: BigInt(p.offset), total: BigInt(p.total), elapsed: { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1e6 } },
                  },
                },
              }),
            );
          },
          ctx.signal,
        );
      } catch (err) {
        if (err instanceof ApiError) throw err;
        const status = (err as { status?: number }).status;
        throw new ApiError(status === 404 ? Code.NotFound : Code.Internal, `error pulling image: ${(err as Error).message}`);
      }
      await Promise.all(pending);
      await send({ response: { case: "name", value: pulled.name } });
    },
  };
}
