/**
 * block.DiscoveredVolumesController: DiscoveredVolumes (`runtime`/<name>) for every disk (Disks resources, and
 * the system disk when it is an image file) and every partition of its GPT, each with what a superblock probe
 * finds there (xfs, ext4, vfat, swap, luks, talosmeta, ...). Partitions are named as Linux names them (`vda1`,
 * `nvme0n1p1`). Re-probed periodically: upstream reacts to udev events, which this node does not have.
 */
import { prettySize } from "../../host/disks.js";
import { probeVolume, sysfsDevicePath, type ProbeResult } from "../../host/block-probe.js";
import { readLayout, type DiskLayout } from "../../boot/layout.js";
import { DiskType, type DiskSpec } from "../../machinery/resources/types/block.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import { DiscoveredVolumeType, SystemDiskType, type DiscoveredVolumeSpec } from "../../machinery/resources/types/volumes.js";
import type { Controller } from "../../state/runtime/index.js";
import { readAll, readSpec } from "../../machinery/resources/read.js";
import { SYSTEM_DISK_ID } from "./system-disk.js";

export interface DiscoveredVolumesOptions {
  probe?: (path: string, offset: number, size: number) => Promise<ProbeResult>;
  layout?: (path: string) => Promise<DiskLayout | undefined>;
  devicePath?: (name: string) => Promise<string>;
  refreshMs?: number;
}

export function partitionName(disk: string, index: number): string {
  return /\d$/.test(disk) ? `${disk}p${index}` : `${disk}${index}`;
}

function fromProbe(p: ProbeResult): Partial<DiscoveredVolumeSpec> {
  return {
    name: p.name,
    uuid: p.uuid,
    label: p.label,
    block_size: p.blockSize,
    filesystem_block_size: p.filesystemBlockSize,
    probed_size: p.probedSize,
  };
}

export function discoveredVolumesController(opts: DiscoveredVolumesOptions = {}): Controller {
  const probe = opts.probe ?? probeVolume;
  const layout = opts.layout ?? ((p: string) => readLayout(p).catch(() => undefined));
  const devicePath = opts.devicePath ?? ((n: string) => sysfsDevicePath(n));
  return {
    name: "block.DiscoveredVolumesController",
    inputs: [
      { namespace: RUNTIME_NS, type: DiskType.type, kind: "weak" },
      { namespace: RUNTIME_NS, type: SystemDiskType.type, id: SYSTEM_DISK_ID, kind: "weak" },
    ],
    outputs: [{ type: DiscoveredVolumeType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const disks = new Map<string, { id: string; spec: Pick<DiskSpec, "dev_path" | "size" | "sector_size" | "io_size">; file: boolean }>();
      for (const r of readAll(ctx, DiskType)) disks.set(r.spec.dev_path, { id: r.metadata.id, spec: r.spec, file: false });
      const sys = readSpec(ctx, SystemDiskType, SYSTEM_DISK_ID);
      if (sys && !disks.has(sys.devPath)) disks.set(sys.devPath, { id: sys.diskID, spec: { dev_path: sys.devPath, size: 0, sector_size: 512, io_size: 0 }, file: true });
      const keep: string[] = [];
      for (const d of disks.values()) {
        const devPath = d.spec.dev_path;
        const gpt = await layout(devPath);
        const size = d.spec.size || gpt?.diskSizeBytes || 0;
        let found: ProbeResult;
        try {
          found = gpt ? { name: "gpt" } : await probe(devPath, 0, size);
        } catch (err) {
          // Unreadable (permissions, a vanished device): list it without content, as "nothing found".
          ctx.log("probe failed", { dev: devPath, error: (err as Error).message });
          found = { name: "" };
        }
        const disk: DiscoveredVolumeSpec = {
          dev_path: devPath,
          type: "disk",
          device_path: d.file ? "" : await devicePath(d.id),
          offset: 0,
          size,
          pretty_size: prettySize(size),
          sector_size: d.spec.sector_size,
          io_size: d.spec.io_size,
          ...fromProbe(found),
          name: found.name,
        };
        ctx.apply({ namespace: RUNTIME_NS, type: DiscoveredVolumeType.type, id: d.id, spec: disk });
        keep.push(d.id);
        for (const p of gpt?.partitions ?? []) {
          const id = partitionName(d.id, p.index);
          // A partition of an image file has no device node: it is the file at `offset`.
          const pPath = d.file ? devPath : `/dev/${id}`;
          let content: ProbeResult;
          try {
            content = await probe(devPath, p.offset, p.size);
          } catch {
            content = { name: "" };
          }
          const spec: DiscoveredVolumeSpec = {
            dev_path: pPath,
            type: "partition",
            device_path: d.file ? "" : await devicePath(id),
            parent: d.id,
            parent_dev_path: devPath,
            offset: p.offset,
            size: p.size,
            pretty_size: prettySize(p.size),
            sector_size: d.spec.sector_size,
            io_size: d.spec.io_size,
            ...fromProbe(content),
            name: content.name,
            partition_uuid: p.uniqueGuid.toLowerCase(),
            partition_type: p.typeGuid.toLowerCase(),
            partition_label: p.name || undefined,
            partition_index: p.index,
          };
          ctx.apply({ namespace: RUNTIME_NS, type: DiscoveredVolumeType.type, id, spec });
          keep.push(id);
        }
      }
      ctx.cleanup(RUNTIME_NS, DiscoveredVolumeType.type, keep);
      return { requeueAfterMs: opts.refreshMs ?? 30_000 };
    },
  };
}

