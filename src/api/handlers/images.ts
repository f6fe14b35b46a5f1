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
import type { ImageListRequest, ImagePullRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import { ApiError, Code, invalidArgument, unimplemented } from "../../machinery/errors.js";
import { one } from "../reply.js";
import type { ImageManager, ImageStore } from "../../lifecycle/images/manager.js";
import type { InstallManager } from "../../lifecycle/install/manager.js";
import type { PullProgress } from "../../lifecycle/images/pull.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";

/**
 * Upstream's ContainerdInstanceHelper: the driver picks the containerd (CRI: the one the kubelet uses; CONTAINERD:
 * the system one), the namespace its namespace; with its checks and texts.
 */
export function containerdStore(inst: ContainerdInstance | undefined): ImageStore {
  const driver = inst?.driver ?? ContainerDriver.CONTAINERD;
  if (driver !== ContainerDriver.CONTAINERD && driver !== ContainerDriver.CRI) throw invalidArgument(`invalid containerd driver ${driver}`);
  const ns = inst?.namespace ?? ContainerdNamespace.NS_UNKNOWN;
  if (ns !== ContainerdNamespace.NS_SYSTEM && ns !== ContainerdNamespace.NS_CRI) throw invalidArgument(`invalid containerd namespace ${ContainerdNamespace[ns] ?? ns}`);
  if (driver === ContainerDriver.CONTAINERD && ns === ContainerdNamespace.NS_CRI) throw invalidArgument("cannot use CRI namespace with containerd driver");
  // k8s.io is the CRI containerd's. Our `system` store is the system containerd for both drivers: machined keeps
  // the installer images there (talosctl upgrade pulls with CRI/system, then Upgrade reads the same store), where
  // upstream uses the CRI containerd's system namespace.
  return ns === ContainerdNamespace.NS_CRI ? { containerd: "cri", namespace: "k8s.io" } : { containerd: "system", namespace: "system" };
}

/** The containerd namespace name of an instance (for callers that only use the system containerd). */
export function containerdNamespace(inst: ContainerdInstance | undefined): string {
  return containerdStore(inst).namespace;
}

/** The legacy calls' store: as the CRI driver with the request's namespace (see containerdStore). */
export function legacyStore(ns: ContainerdNamespace): ImageStore {
  if (ns !== ContainerdNamespace.NS_CRI && ns !== ContainerdNamespace.NS_SYSTEM) throw invalidArgument(`invalid namespace ${ContainerdNamespace[ns] ?? ns}`);
  return containerdStore({ driver: ContainerDriver.CRI, namespace: ns } as ContainerdInstance);
}

/** The install manager, for the lifecycle/upgrade/reset/META handlers. */
export function installManager(deps: ApiDeps): InstallManager {
  if (!deps.install) throw unimplemented("installation is not available on this node");
  return deps.install;
}

/** The node's image service; the install manager's own while the wiring passes only that. */
export function imageManager(deps: ApiDeps): ImageManager {
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
      const store = containerdStore(req.containerd);
      for (const img of await imageManager(deps).list(store)) {
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
      const store = containerdStore(req.containerd);
      if (!req.imageRef) throw invalidArgument("image reference is required");
      await imageManager(deps).remove(store, req.imageRef);
      return {};
    },
    Pull: async (req: ImageServicePullRequest, send, ctx: CallContext) => {
      const store = containerdStore(req.containerd);
      const mgr = imageManager(deps);
      const pending: Promise<void>[] = [];
      let pulled;
      try {
        pulled = await mgr.pull(
          req.imageRef,
          store,
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
        throw pullError(err);
      }
      await Promise.all(pending);
      await send({ response: { case: "name", value: pulled.name } });
    },
  };
}

/** Pull errors as upstream answers them: NotFound for an unknown image, our own ApiErrors as they are. */
export function pullError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const status = (err as { status?: number }).status;
  return new ApiError(status === 404 ? Code.NotFound : Code.Internal, `error pulling image: ${(err as Error).message}`);
}

/**
 * MachineService ImageList / ImagePull, deprecated upstream but still what talosctl falls back to, and what
 * `upgrade-k8s` pre-pulls with: always the CRI containerd, the namespace from the request.
 */
export function legacyImageHandlers(deps: ApiDeps): Handlers {
  return {
    ImageList: async (req: ImageListRequest, send) => {
      for (const img of await imageManager(deps).list(legacyStore(req.namespace))) {
        const ms = img.createdAt?.getTime();
        await send({
          name: img.name,
          digest: img.digest,
          size: BigInt(img.size),
          createdAt: ms === undefined ? undefined : { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1e6 },
        });
      }
    },
    ImagePull: async (req: ImagePullRequest, ctx: CallContext) => {
      const store = legacyStore(req.namespace);
      if (!req.reference) throw invalidArgument("image reference is required");
      try {
        await imageManager(deps).pull(req.reference, store, undefined, ctx.signal);
      } catch (err) {
        throw pullError(err);
      }
      return one(ctx, {});
    },
  };
}
