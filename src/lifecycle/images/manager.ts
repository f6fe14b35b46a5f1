/**
 * ImageService (talosctl image pull / list / remove) as one object, independent of installation: it needs
 * containerd (for List/Remove, and Pull when it runs), the machine config's registry settings and a cache
 * folder, nothing about disks. The install manager pulls installer images through the same object, so both
 * share one cache and one set of registry settings.
 */
import type { Files } from "../../host/files/index.js";
import { EMPTY_REGISTRIES } from "./registry-hosts.js";
import type { Registries } from "../../machinery/config/registries.js";
import { failedPrecondition, notFound } from "../../machinery/errors.js";
import type { Ctr } from "../../supervisor/index.js";
import { ImagePuller, type PulledImage, type PullProgress } from "./pull.js";
import { listImages, removeImage, type ImageInfo } from "./store.js";

export interface ImageManagerOptions {
  /** Cache folder for registry pulls and unpacked oci-archive files (`<stateDir>` in the wirings). */
  cacheDir: string;
  /** Platform architecture of this machine (amd64, arm64). */
  arch: string;
  /** The node's running containerd, or undefined while it is not running. */
  ctr?: () => Ctr | undefined;
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

  /** Pulls into containerd's `namespace` (or our cache while containerd is not running). */
  pull(ref: string, namespace: string, onProgress?: (p: PullProgress) => void, signal?: AbortSignal): Promise<PulledImage> {
    return this.puller.pull({ ref, namespace, onProgress, signal, registries: this.o.registries?.() ?? EMPTY_REGISTRIES });
  }

  /** containerd's image store, or a FailedPrecondition naming why it is not there. */
  private containerd(): Ctr {
    const ctr = this.o.ctr?.();
    if (!ctr) throw failedPrecondition("containerd is not running on this node, so it has no image store to list or change");
    return ctr;
  }

  list(namespace: string): Promise<ImageInfo[]> {
    return listImages(this.containerd(), namespace, this.o.arch);
  }

  async remove(namespace: string, ref: string): Promise<void> {
    if (!(await removeImage(this.containerd(), namespace, ref))) throw notFound(`image ${JSON.stringify(ref)} not found in namespace ${namespace}`);
  }
}
