/**
 * block.VolumeManagerController: VolumeStatuses. What a volume is depends on how the node runs, so the
 * list comes from an injected source. In local mode (`localFolderVolumes`) STATE and EPHEMERAL are
 * the state folder itself: type `directory`, phase `ready`, location = the folder, size = the size of
 * the filesystem holding it (what the health check's disk-size step compares).
 */
import { prettySize } from "../../host/disks.js";
import { hostFiles, type Files } from "../../host/files/index.js";
import { VolumeStatusType, type VolumeStatusSpec } from "../../machinery/resources/types/block.js";
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
