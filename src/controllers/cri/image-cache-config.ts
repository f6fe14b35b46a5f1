/**
 * cri.ImageCacheConfigController: ImageCacheConfig `image-cache`. The local image cache (machine.features.imageCache)
 * is not implemented on this node, so the status is what upstream reports with the feature off: disabled, copy
 * skipped, no roots.
 */
import { CRI_NS, ImageCacheConfigType } from "../../machinery/resources/types/node-config.js";
import type { Controller } from "../../state/runtime/index.js";
import { machineConfigInput } from "../../machinery/resources/types/config.js";

export function imageCacheConfigController(): Controller {
  return {
    name: "cri.ImageCacheConfigController",
    inputs: [machineConfigInput],
    outputs: [{ type: ImageCacheConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      ctx.apply({ namespace: CRI_NS, type: ImageCacheConfigType.type, id: "image-cache", spec: { status: "disabled", copyStatus: "skipped", roots: [] } });
    },
  };
}
