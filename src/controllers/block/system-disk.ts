/**
 * block.SystemDiskController: SystemDisk `system-disk`, the disk Talos is installed on — the one carrying this
 * OS's partition layout (boot/layout.ts). Candidates: the Disks, and the configured install disk when it is a
 * disk-image file (local mode installs onto files). No installed disk, no SystemDisk, as upstream.
 */
import { basename } from "node:path";
import { hostFiles } from "../../host/files/index.js";
import { readLayout } from "../../boot/layout.js";
import { DiskType } from "../../machinery/resources/types/block.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import { SystemDiskType } from "../../machinery/resources/types/volumes.js";
import type { Controller } from "../../state/runtime/index.js";
import { readAll } from "../../machinery/resources/read.js";
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";

export const SYSTEM_DISK_ID = "system-disk";

export interface SystemDiskOptions {
  /** True when `path` carries this OS's layout; default: its GPT is read. */
  isSystemDisk?: (path: string) => Promise<boolean>;
  refreshMs?: number;
}

async function installedLayout(path: string): Promise<boolean> {
  return readLayout(path).then(
    (l) => l.machined,
    () => false,
  );
}

async function isFile(path: string): Promise<boolean> {
  return hostFiles.stat(path).then(
    (s) => s.isFile(),
    () => false,
  );
}

export function systemDiskController(opts: SystemDiskOptions = {}): Controller {
  const check = opts.isSystemDisk ?? installedLayout;
  const ptr = { namespace: RUNTIME_NS, type: SystemDiskType.type, id: SYSTEM_DISK_ID };
  return {
    name: "block.SystemDiskController",
    inputs: [{ namespace: RUNTIME_NS, type: DiskType.type, kind: "weak" }, machineConfigInput],
    outputs: [{ type: SystemDiskType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const candidates: { id: string; path: string }[] = readAll(ctx, DiskType).map((r) => ({ id: r.metadata.id, path: r.spec.dev_path }));
      const target = machineConfig(ctx)?.machine?.install?.disk;
      if (target && !candidates.some((c) => c.path === target) && (await isFile(target))) candidates.push({ id: basename(target), path: target });
      let found: { id: string; path: string } | undefined;
      for (const c of candidates) {
        if (await check(c.path)) {
          found = c;
          break;
        }
      }
      if (found) ctx.apply({ ...ptr, spec: { diskID: found.id, devPath: found.path } });
      else ctx.destroy(ptr);
      return { requeueAfterMs: opts.refreshMs ?? 30_000 };
    },
  };
}
