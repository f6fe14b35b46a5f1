/**
 * Idempotent mounting: read /proc/self/mountinfo, skip targets that are already mount points, mount the rest
 * through the Syscalls interface. File access goes through `MountFs` so tests run on fakes.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { MS, type Syscalls } from "./syscalls.js";

export interface MountInfoEntry {
  id: number;
  parentId: number;
  root: string;
  mountPoint: string;
  options: string;
  fstype: string;
  source: string;
  superOptions: string;
  /** The optional fields between the options and "-" (propagation: "shared:N", "master:N", ...). */
  optional?: string;
}

// mountinfo escapes space, tab, newline and backslash as 3-digit octal (\040 ...).
const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** Parses proc(5) mountinfo: "id parent maj:min root mountpoint opts [optional...] - fstype source superopts". */
export function parseMountInfo(text: string): MountInfoEntry[] {
  const entries: MountInfoEntry[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const f = line.split(" ");
    const sep = f.indexOf("-", 6); // optional fields end at the first lone "-"
    if (f.length < 10 || sep < 0) continue;
    entries.push({
      id: Number(f[0]),
      parentId: Number(f[1]),
      root: unescape(f[3]),
      mountPoint: unescape(f[4]),
      options: f[5],
      fstype: f[sep + 1],
      source: unescape(f[sep + 2] ?? ""),
      superOptions: f[sep + 3] ?? "",
      optional: f.slice(6, sep).join(" "),
    });
  }
  return entries;
}

export interface MountSpec {
  source: string;
  target: string;
  fstype: string;
  flags: number;
  data: string | null;
  /** mode for the target folder if it has to be created */
  mode?: number;
}

export interface MountFs {
  /** contents of /proc/self/mountinfo, or null when /proc is not mounted yet (early boot) */
  readMountInfo(): string | null;
  mkdirp(path: string, mode: number): void;
}

export const nodeMountFs: MountFs = {
  readMountInfo() {
    try {
      return readFileSync("/proc/self/mountinfo", "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
  },
  mkdirp(path, mode) {
    mkdirSync(path, { recursive: true, mode });
  },
};

export interface MountOutcome {
  target: string;
  fstype: string;
  action: "mounted" | "skipped" | "failed";
  /** for "skipped": the filesystem type already mounted there */
  existing?: string;
  error?: Error;
}

export function ensureMounted(sys: Pick<Syscalls, "mount">, spec: MountSpec, fs: MountFs): MountOutcome {
  const base = { target: spec.target, fstype: spec.fstype };
  // Re-read every time: mounting /proc is what makes mountinfo readable, and earlier mounts change the table.
  const info = fs.readMountInfo();
  // The last entry wins: a later mount over the same point hides earlier ones.
  const existing = info === null ? undefined : parseMountInfo(info).findLast((m) => m.mountPoint === spec.target);
  if (existing) return { ...base, action: "skipped", existing: existing.fstype };
  try {
    fs.mkdirp(spec.target, spec.mode ?? 0o755);
    sys.mount(spec.source, spec.target, spec.fstype, spec.flags, spec.data);
    return { ...base, action: "mounted" };
  } catch (err) {
    return { ...base, action: "failed", error: err as Error };
  }
}

/** Mounts in order and keeps going after a failure, so one bad mount does not hide the state of the others. */
export function ensureMounts(sys: Pick<Syscalls, "mount">, specs: readonly MountSpec[], fs: MountFs = nodeMountFs): MountOutcome[] {
  return specs.map((spec) => ensureMounted(sys, spec, fs));
}

const MS_SHARED = 1 << 20;

/**
 * Make `path` a shared mount point of this mount namespace (bind-mounting it onto itself first if it is not one), so
 * mounts made below it in another namespace that shares it (the kubelet's container, for pod volumes) show up here,
 * where containerd resolves them. Idempotent.
 */
export function ensureSharedMount(sys: Pick<Syscalls, "mount">, path: string, fs: MountFs = nodeMountFs): void {
  fs.mkdirp(path, 0o755);
  const info = fs.readMountInfo();
  const entry = info === null ? undefined : parseMountInfo(info).findLast((m) => m.mountPoint === path);
  if (!entry) sys.mount(path, path, null, MS.BIND | MS.REC, null);
  const again = fs.readMountInfo();
  const now = again === null ? undefined : parseMountInfo(again).findLast((m) => m.mountPoint === path);
  // mountinfo's optional fields carry "shared:N" for a shared mount.
  if (!now || !/(^|\s)shared:\d+/.test(now.optional ?? "")) sys.mount("none", path, null, MS_SHARED | MS.REC, null);
}
