/** block.DisksController, block.VolumeManagerController, block.MountController and runtime.MountStatusController. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { DiskInfo } from "../../../src/host/disks.js";
import {
  BlockMountStatusType,
  DiskType,
  RuntimeMountStatusType,
  VolumeStatusType,
  type BlockMountStatusSpec,
  type DiskSpec,
  type VolumeStatusSpec,
} from "../../../src/machinery/resources/types/block.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { disksController } from "../../../src/controllers/block/disks.js";
import { mountController } from "../../../src/controllers/block/mounts.js";
import { localFolderVolumes, volumeManagerController, type VolumeInfo } from "../../../src/controllers/block/volumes.js";
import { mountStatusController } from "../../../src/controllers/runtime/mount-status.js";
import { eventually, spec, startRuntime } from "../runtime/harness.js";

const NS = "runtime";

function disk(id: string, size: number): DiskInfo {
  return {
    id, devPath: `/dev/${id}`, size, ioSize: 512, sectorSize: 512, readonly: false, cdrom: false, rotational: true, model: "QEMU HARDDISK",
    serial: "", modalias: "", wwid: "", uuid: "", name: "", firmwareVersion: "", busPath: "/pci0000:00/0000:00:05.0", subsystem: "/sys/class/block",
    transport: "virtio", type: "hdd", secondaryDisks: [], symlinks: [], file: false,
  };
}

describe("block.DisksController", () => {
  it("publishes discovered disks with snake_case specs and drops vanished ones on the next scan", async () => {
    let found = [disk("sda", 10_000_000_000), disk("vdb", 5_000_000_000)];
    const s = new InMemoryState();
    startRuntime(s, [disksController({ discover: async () => found, refreshMs: 10 })]);
    await eventually(() => s.list(NS, DiskType.type).length === 2, 2000, "disks");
    expect(spec<DiskSpec>(s, NS, DiskType.type, "sda")).toMatchObject({ dev_path: "/dev/sda", size: 10_000_000_000, pretty_size: "10 GB", transport: "virtio", rotational: true });
    found = [disk("sda", 10_000_000_000)];
    await eventually(() => s.list(NS, DiskType.type).length === 1, 2000, "vdb gone");
  });
});

describe("local volumes and mounts", () => {
  it("the state folder is STATE and EPHEMERAL: a ready directory sized by its filesystem; mounts follow", async () => {
    const dir = await mkdtemp(join(tmpdir(), "machined-vol-"));
    try {
      const s = new InMemoryState();
      startRuntime(s, [volumeManagerController({ volumes: localFolderVolumes(dir), refreshMs: 0 }), mountController(), mountStatusController()]);
      await eventually(() => s.list(NS, BlockMountStatusType.type).length === 2, 2000, "mounts");
      const eph = spec<VolumeStatusSpec>(s, NS, VolumeStatusType.type, "EPHEMERAL")!;
      expect(eph).toMatchObject({ phase: "ready", type: "directory", location: dir, mountLocation: dir });
      expect(eph.size).toBeGreaterThan(0);
      expect(spec<BlockMountStatusSpec>(s, NS, BlockMountStatusType.type, "STATE")).toMatchObject({
        spec: { volumeID: "STATE" },
        source: dir,
        target: dir,
        filesystem: "none",
      });
      // Folders are not partitions: the legacy `mounts` view stays empty, as upstream.
      expect(s.list(NS, RuntimeMountStatusType.type)).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("partitions appear in the legacy mounts view", async () => {
    const vols: VolumeInfo[] = [
      { id: "EPHEMERAL", spec: { phase: "ready", type: "partition", location: "/dev/sda6", mountLocation: "/dev/sda6", filesystem: "xfs", mountSpec: { targetPath: "/var", selinuxLabel: "", projectQuotaSupport: true } } },
      { id: "META", spec: { phase: "ready", type: "partition", location: "/dev/sda4" } },
    ];
    const s = new InMemoryState();
    startRuntime(s, [volumeManagerController({ volumes: async () => vols, refreshMs: 0 }), mountController(), mountStatusController()]);
    await eventually(() => s.list(NS, RuntimeMountStatusType.type).length === 1, 2000, "legacy mount");
    expect(spec(s, NS, RuntimeMountStatusType.type, "EPHEMERAL")).toEqual({ source: "/dev/sda6", target: "/var", filesystemType: "xfs", options: [], encrypted: false });
    expect(spec<BlockMountStatusSpec>(s, NS, BlockMountStatusType.type, "EPHEMERAL")!.projectQuotaSupport).toBe(true);
    expect(spec(s, NS, BlockMountStatusType.type, "META")).toBeUndefined();
  });
});
