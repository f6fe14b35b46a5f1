/**
 * block.VolumeConfigController: VolumeConfig (`runtime`/<volume id>) for each system volume this node manages
 * (the VolumeStatuses' source): its type, how it is provisioned and located (a partition by its GPT label, with
 * its filesystem) and where it is mounted. A directory volume (local mode's state folder) needs neither
 * provisioning nor a locator.
 */
import { VolumeStatusType, type VolumeStatusSpec } from "../../machinery/resources/types/block.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import { VolumeConfigType, type VolumeConfigSpec } from "../../machinery/resources/types/volumes.js";
import type { Controller } from "../../state/runtime/index.js";
import { readAll } from "../../machinery/resources/read.js";

export function volumeConfigSpec(id: string, s: VolumeStatusSpec): VolumeConfigSpec {
  const mountPath = s.mountSpec?.targetPath ?? s.mountLocation;
  const mount = mountPath
    ? { targetPath: mountPath, selinuxLabel: s.mountSpec?.selinuxLabel ?? "", projectQuotaSupport: s.mountSpec?.projectQuotaSupport ?? false }
    : undefined;
  if (s.type !== "partition") return { type: s.type, provisioning: {}, locator: {}, mount };
  return {
    type: s.type,
    provisioning: {
      partitionSpec: { minSize: s.size ?? 0, relativeMaxSize: 0, negativeMaxSize: false, grow: false, label: id },
      ...(s.filesystem && s.filesystem !== "none" ? { filesystemSpec: { type: s.filesystem, label: id } } : {}),
    },
    locator: { match: `volume.partition_label == ${JSON.stringify(id)}` },
    mount,
  };
}

export function volumeConfigController(): Controller {
  return {
    name: "block.VolumeConfigController",
    inputs: [{ namespace: RUNTIME_NS, type: VolumeStatusType.type, kind: "weak" }],
    outputs: [{ type: VolumeConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const keep: string[] = [];
      for (const r of readAll(ctx, VolumeStatusType)) {
        ctx.apply({ namespace: RUNTIME_NS, type: VolumeConfigType.type, id: r.metadata.id, spec: volumeConfigSpec(r.metadata.id, r.spec) });
        keep.push(r.metadata.id);
      }
      ctx.cleanup(RUNTIME_NS, VolumeConfigType.type, keep);
    },
  };
}
