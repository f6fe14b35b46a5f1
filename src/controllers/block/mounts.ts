/**
 * block.MountController: a block MountStatus for every ready volume that has a mount location — the
 * volume as it is mounted (or, for a local-mode folder, used in place). The mount id is the volume id,
 * as for Talos's own system volumes.
 */
import { BlockMountStatusType, VolumeStatusType } from "../../machinery/resources/types/block.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import type { Controller } from "../../state/runtime/index.js";
import { readAll } from "../../machinery/resources/read.js";

export function mountController(): Controller {
  return {
    name: "block.MountController",
    inputs: [{ namespace: RUNTIME_NS, type: VolumeStatusType.type, kind: "weak" }],
    outputs: [{ type: BlockMountStatusType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const keep: string[] = [];
      for (const v of readAll(ctx, VolumeStatusType)) {
        const vs = v.spec;
        if (vs.phase !== "ready" || !vs.mountLocation) continue;
        const id = v.metadata.id;
        ctx.apply({
          namespace: RUNTIME_NS,
          type: BlockMountStatusType.type,
          id,
          spec: {
            spec: { volumeID: id, parentID: "", readOnly: false, detached: false, requesters: [], requesterIDs: [] },
            source: vs.mountLocation,
            target: vs.mountSpec?.targetPath ?? vs.mountLocation,
            filesystem: vs.filesystem ?? "none",
            readOnly: false,
            projectQuotaSupport: vs.mountSpec?.projectQuotaSupport ?? false,
            detached: false,
          },
        });
        keep.push(id);
      }
      ctx.cleanup(RUNTIME_NS, BlockMountStatusType.type, keep);
    },
  };
}
