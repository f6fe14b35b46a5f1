/**
 * runtime.MountStatusController: the legacy `talosctl get mounts` view, one entry per mounted
 * partition or whole-disk volume (folders and other volume types are skipped, as upstream does).
 */
import { BlockMountStatusType, RuntimeMountStatusType, VolumeStatusType } from "../../machinery/resources/types/block.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import type { Controller } from "../../state/runtime/index.js";
import { read, readAll } from "../../machinery/resources/read.js";

export function mountStatusController(): Controller {
  return {
    name: "runtime.MountStatusController",
    inputs: [
      { namespace: RUNTIME_NS, type: BlockMountStatusType.type, kind: "weak" },
      { namespace: RUNTIME_NS, type: VolumeStatusType.type, kind: "weak" },
    ],
    outputs: [{ type: RuntimeMountStatusType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const keep: string[] = [];
      for (const m of readAll(ctx, BlockMountStatusType)) {
        const ms = m.spec;
        const vol = read(ctx, VolumeStatusType, ms.spec.volumeID);
        const vs = vol?.spec;
        if (!vol || !vs || (vs.type !== "partition" && vs.type !== "disk")) continue;
        ctx.apply({
          namespace: RUNTIME_NS,
          type: RuntimeMountStatusType.type,
          id: vol.metadata.id,
          spec: { source: ms.source, target: ms.target, filesystemType: vs.filesystem ?? "none", options: [], encrypted: false },
        });
        keep.push(vol.metadata.id);
      }
      ctx.cleanup(RUNTIME_NS, RuntimeMountStatusType.type, keep);
    },
  };
}
