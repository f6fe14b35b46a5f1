/**
 * ImageService (talosctl image pull / list / remove) as one object, independent of installation: it needs
 * containerd (for List/Remove, and Pull when it runs), the machine config's registry settings and a cache
 * folder, nothing about disks. The install manager pulls installer images through the same object, so both
 * share one cache and one set of registry settings.
 *
 * Two image stores: the CRI containerd's k8s.io namespace (what the kubelet runs: `talosctl image ls` without
 * flags, upgrade-k8s's pre-pulls) and the system containerd's system namespace (machined's own images, the
 * installer). See containerdStore in api/handlers/images.ts for how a request's driver and namespace pick one.
 */
import type { Files } from "../../host/files/index.js";
import { EMPTY_REGISTRIES } from "./registry-hosts.js";
import type { Registries } from "../../machinery/config/registries.js";
import { failedPrecondition, notFound } from "../../machinery/errors.js";
import type { Ctr } from "../../supervisor/index.js";
import { ImagePuller, type PulledImage, type PullProgress } from "./pull.js";
import { listImages, removeImage, type ImageInfo } from "./store.js";

/** Which containerd and which of its namespaces. */
export interface ImageStore {
  containerd: "system" | "cri";
  namespace: string;
}

export interface ImageManagerOptions {
  /** Cache folder for registry pulls and unpacked oci-archive files (`<stateDir>` in the wirings). */
  cacheDir: string;
  /** Platform architecture of this machine (amd64, arm64). */
  arch: string;
  /** The node's running (system) containerd, or undefined while it is not running. */
  ctr?: () => Ctr | undefined;
  /** The CRI containerd, where the node runs Kubernetes and while it runs; undefined elsewhere. */
  criCtr?: () => Ctr | undefined;
  /** Registries spoken to over plain HTTP besides loopback ones. */
  insecureRegistries?: string[];
  /** Mirrors, credentials and TLS settings of the active machine config. */
  registries?: () => Registries;
  fetch?: typeof fetch;
  files?: Files;
}

export class ImageManager {
  readonly puller: ImagePuller;

  constructor(private readonly o: ImageManagerOptions) {
    this.puller = new ImagePuller({ cacheDir: o.cacheDir, arch: o.arch, ctr: o.ctr, insecureRegistries: o.insecureRegistries, fetch: o.fetch, files: o.files });
  }

  get arch(): string {
    return this.o.arch;
  }

  /**
   * Pulls into a store: the system containerd's (or our cache while it is not running), or the CRI containerd's,
   * which must be running.
   */
  pull(ref: string, store: ImageStore, onProgress?: (p: PullProgress) => void, signal?: AbortSignal): Promise<PulledImage> {
    const into = store.containerd === "cri" && this.o.criCtr ? this.containerd(store) : undefined;
    return this.puller.pull({ ref, namespace: store.namespace, into, onProgress, signal, registries: this.o.registries?.() ?? EMPTY_REGISTRIES });
  }

  /** The store's containerd, or a FailedPrecondition naming why it is not there. */
  containerd(store: ImageStore): Ctr {
    // A node that runs no Kubernetes has no CRI containerd: its one containerd holds the k8s.io namespace too
    // (local mode; talosctl's image commands default to the CRI namespace).
    if (store.containerd === "cri" && this.o.criCtr) {
      const cri = this.o.criCtr();
      if (!cri) throw failedPrecondition("the CRI containerd is not running on this node yet, so its image store cannot be used");
      return cri;
    }
    const ctr = this.o.ctr?.();
    if (!ctr) throw failedPrecondition("containerd is not running on this node, so it has no image store to list or change");
    return ctr;
  }

  list(store: ImageStore): Promise<ImageInfo[]> {
    return listImages(this.containerd(store), store.namespace, this.o.arch);
  }

  async remove(store: ImageStore, ref: string): Promise<void> {
    if (!(await removeImage(this.containerd(store), store.namespace, ref))) throw notFound(`image ${JSON.stringify(ref)} not found in namespace ${store.namespace}`);
  }
}
