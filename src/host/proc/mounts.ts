/** /proc/mounts + statfs → machine.MountStat (sizes in bytes: block size × blocks / available blocks). */
import { stat, statfs } from "node:fs/promises";
import type { MountStat } from "../../machinery/api/gen/machine/machine_pb.js";
import { type Plain, type RootOptions, hostPath, readText } from "./fs.js";

export type MountStatInit = Plain<MountStat>;

export interface MountEntry {
  filesystem: string;
  mountedOn: string;
}

export interface MountsOptions extends RootOptions {
  /** Size probe; defaults to statfs(2) of the mount point under `root`. Returns undefined when unknown. */
  statfs?: (mountedOn: string) => Promise<{ size: bigint; available: bigint } | undefined>;
}

/** The kernel escapes space, tab, newline and backslash in mount fields as \ooo octal. */
function unescapeOctal(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
}

export function parseMounts(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split("\n")) {
    const f = line.trim().split(/\s+/);
    if (f.length < 2 || !f[0]) continue;
    out.push({ filesystem: unescapeOctal(f[0]), mountedOn: unescapeOctal(f[1]) });
  }
  return out;
}

function defaultStatfs(opts?: RootOptions) {
  return async (mountedOn: string) => {
    const p = hostPath(opts, mountedOn);
    try {
      // Upstream only probes directories (a file bind mount reports 0/0) and reports 0/0 when statfs fails.
      if (!(await stat(p)).isDirectory()) return undefined;
      const s = await statfs(p, { bigint: true });
      return { size: s.bsize * s.blocks, available: s.bsize * s.bavail };
    } catch {
      return undefined;
    }
  };
}

export async function readMounts(opts?: MountsOptions): Promise<MountStatInit[]> {
  const probe = opts?.statfs ?? defaultStatfs(opts);
  const entries = parseMounts(await readText(opts, "proc/mounts"));
  return Promise.all(
    entries.map(async (e) => {
      const s = await probe(e.mountedOn);
      return { filesystem: e.filesystem, size: s?.size ?? 0n, available: s?.available ?? 0n, mountedOn: e.mountedOn };
    }),
  );
}
