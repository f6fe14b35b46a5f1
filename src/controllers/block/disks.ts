/**
 * block.DisksController: one Disk per whole block device (`runtime`/<kernel name>). Talos reacts to
 * udev events; without udev here the discovery is simply re-run every `refreshMs`.
 */
import { diskSpecFields, discoverDisks, type DiskInfo } from "../../host/disks.js";
import { DiskType, type DiskSpec } from "../../machinery/resources/types/block.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import type { Controller } from "../../state/runtime/index.js";

export interface DisksOptions {
  /** Disk discovery; default: host/disks.ts `discoverDisks()` on the live /sys. */
  discover?: () => Promise<DiskInfo[]>;
  /** Re-discovery period; 0 disables polling. Default 30 s. */
  refreshMs?: number;
}

export function diskSpec(d: DiskInfo): DiskSpec {
  const f = diskSpecFields(d);
  return {
    dev_path: f.devPath,
    size: f.size,
    pretty_size: f.prettySize,
    io_size: f.ioSize,
    sector_size: f.sectorSize,
    readonly: f.readonly,
    cdrom: f.cdrom,
    model: f.model,
    firmware_version: f.firmwareVersion,
    serial: f.serial,
    modalias: f.modalias,
    wwid: f.wwid,
    uuid: f.uuid,
    bus_path: f.busPath,
    sub_system: f.subSystem,
    transport: f.transport,
    rotational: f.rotational,
    secondary_disks: f.secondaryDisks,
    symlinks: f.symlinks,
  };
}

export function disksController(opts: DisksOptions = {}): Controller {
  const discover = opts.discover ?? (() => discoverDisks());
  const refreshMs = opts.refreshMs ?? 30_000;
  return {
    name: "block.DisksController",
    inputs: [],
    outputs: [{ type: DiskType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const disks = await discover();
      for (const d of disks) ctx.apply({ namespace: RUNTIME_NS, type: DiskType.type, id: d.id, spec: diskSpec(d) });
      ctx.cleanup(RUNTIME_NS, DiskType.type, disks.map((d) => d.id));
      return refreshMs > 0 ? { requeueAfterMs: refreshMs } : undefined;
    },
  };
}
