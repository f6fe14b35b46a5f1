/**
 * block.VolumeManagerController: VolumeStatuses. What a volume is depends on how the node runs, so the
 * list comes from an injected source. In local mode (`localFolderVolumes`) STATE and EPHEMERAL are
 * the state folder itself: type `directory`, phase `ready`, location = the folder, size = the size of
 * the filesystem holding it (what the health check's disk-size step compares). A node that owns its disk
 * (`mountedVolumes`, PID 1) reports what is mounted where upstream puts each volume: STATE on /system/state and
 * EPHEMERAL on /var, as a partition (its device, disk, index, filesystem and partition size) or, before an install,
 * the tmpfs there.
 */
import { prettySize } from "../../host/disks.js";
import { hostFiles, type Files } from "../../host/files/index.js";
import { parseMountInfo, type MountInfoEntry } from "../../host/mounts.js";
import { VolumeStatusType, type FilesystemName, type VolumeStatusSpec } from "../../machinery/resources/types/block.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import type { Controller } from "../../state/runtime/index.js";

export interface VolumeInfo {
  id: string;
  spec: VolumeStatusSpec;
}

export interface VolumeManagerOptions {
  volumes: () => Promise<VolumeInfo[]>;
  /** Re-read period (sizes change); 0 disables polling. Default 60 s. */
  refreshMs?: number;
}

/** Total bytes of the filesystem holding `dir`. */
export async function filesystemSize(dir: string, files: Files = hostFiles): Promise<number> {
  const s = await files.statfs(dir);
  return Number(s.blocks) * Number(s.bsize);
}

/** Local mode: STATE and EPHEMERAL are the state folder (a plain directory, nothing is mounted). */
export function localFolderVolumes(stateDir: string, sizeOf: (dir: string) => Promise<number> = (dir) => filesystemSize(dir)): () => Promise<VolumeInfo[]> {
  return async () => {
    const size = await sizeOf(stateDir);
    const spec = (): VolumeStatusSpec => ({
      phase: "ready",
      type: "directory",
      location: stateDir,
      mountLocation: stateDir,
      size,
      prettySize: prettySize(size),
      mountSpec: { targetPath: stateDir, selinuxLabel: "", projectQuotaSupport: false },
    });
    return [
      { id: "EPHEMERAL", spec: spec() },
      { id: "STATE", spec: spec() },
    ];
  };
}

/** Where upstream mounts each volume a node owns. */
export const SYSTEM_VOLUME_MOUNTS: ReadonlyArray<{ id: string; target: string }> = [
  { id: "EPHEMERAL", target: "/var" },
  { id: "STATE", target: "/system/state" },
];

const FILESYSTEMS: readonly FilesystemName[] = ["xfs", "vfat", "ext4", "iso9660", "swap", "virtiofs", "btrfs"];

/** PID 1: the volumes as mounted (the last mount on each target is the one in effect). */
export function mountedVolumes(files: Files = hostFiles, mounts = SYSTEM_VOLUME_MOUNTS): () => Promise<VolumeInfo[]> {
  return async () => {
    const table = parseMountInfo(await files.readFile("/proc/self/mountinfo", "utf8"));
    const out: VolumeInfo[] = [];
    for (const m of mounts) {
      const entry = table.filter((e) => e.mountPoint === m.target).pop();
      if (entry) out.push({ id: m.id, spec: await mountedSpec(files, m.target, entry) });
    }
    return out;
  };
}

async function mountedSpec(files: Files, target: string, e: MountInfoEntry): Promise<VolumeStatusSpec> {
  const mountSpec = { targetPath: target, selinuxLabel: "", projectQuotaSupport: false };
  const dev = /^\/dev\/([\w.-]+)$/.exec(e.source)?.[1];
  const sys = dev ? `/sys/class/block/${dev}` : undefined;
  const index = sys ? Number((await files.readFile(`${sys}/partition`, "utf8").catch(() => "")).trim()) : 0;
  if (!sys || !index) {
    const size = await filesystemSize(target, files).catch(() => 0);
    return { phase: "ready", type: e.fstype === "tmpfs" ? "tmpfs" : "directory", location: e.source, mountLocation: target, size, prettySize: prettySize(size), mountSpec };
  }
  // the partition's size, as upstream reports it (not the filesystem's, which is a little smaller)
  const size = Number((await files.readFile(`${sys}/size`, "utf8")).trim()) * 512;
  const parent = (await files.realpath(sys).catch(() => "")).split("/").slice(-2)[0];
  return {
    phase: "ready",
    type: "partition",
    location: e.source,
    mountLocation: target,
    partitionIndex: index,
    ...(parent ? { parentLocation: `/dev/${parent}` } : {}),
    size,
    prettySize: prettySize(size),
    filesystem: FILESYSTEMS.find((f) => f === e.fstype) ?? "none",
    mountSpec,
  };
}

export function volumeManagerController(opts: VolumeManagerOptions): Controller {
  const refreshMs = opts.refreshMs ?? 60_000;
  return {
    name: "block.VolumeManagerController",
    inputs: [],
    outputs: [{ type: VolumeStatusType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const volumes = await opts.volumes();
      for (const v of volumes) ctx.apply({ namespace: RUNTIME_NS, type: VolumeStatusType.type, id: v.id, spec: v.spec });
      ctx.cleanup(RUNTIME_NS, VolumeStatusType.type, volumes.map((v) => v.id));
      return refreshMs > 0 ? { requeueAfterMs: refreshMs } : undefined;
    },
  };
}
