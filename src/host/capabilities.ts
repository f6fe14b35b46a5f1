/**
 * Supervised processes run without the capabilities to reboot the machine or load kernel modules (CAP_SYS_BOOT,
 * CAP_SYS_MODULE), as upstream's process runner drops them from the bounding set before exec: only machined itself
 * may do either.
 *
 * Node cannot run code between fork and exec, so the child starts as a tiny exec wrapper that drops the
 * capabilities from its bounding and inheritable sets and then execs the real executable in place: same pid, same
 * process group, same stdio. As root, exec recomputes the permitted and effective sets from the bounding set, so the
 * dropped capabilities are gone from all of them (and from the ambient set, which cannot exceed the inheritable).
 * The wrapper is util-linux's setpriv where installed (a few ms), else a small Node program doing the same through
 * prctl/capset/execve with koffi (tens of ms: Node's start-up), which the OS image uses.
 */
import { accessSync, constants } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, join } from "node:path";

export const CAP_SYS_MODULE = 16;
export const CAP_SYS_BOOT = 22;
/** Upstream's DefaultDroppedCapabilities. */
export const DEFAULT_DROPPED_CAPABILITIES = [CAP_SYS_BOOT, CAP_SYS_MODULE];

/** Runs in the child: argv = [koffi path, comma-separated capability numbers, executable path, argv0, ...args]. */
const WRAPPER = `
const [koffiPath, capList, file, argv0, ...args] = process.argv.slice(1);
const koffi = require(koffiPath);
const lib = koffi.load(null);
const ul = "unsigned long";
const prctl = lib.func("int prctl(int option, ...)");
const capget = lib.func("int capget(_Inout_ uint8_t *hdr, _Inout_ uint8_t *data)");
const capset = lib.func("int capset(_Inout_ uint8_t *hdr, _Inout_ uint8_t *data)");
const execve = lib.func("int execve(const char *path, const char **argv, const char **envp)");
const die = (what) => { process.stderr.write("fork/exec " + file + ": " + what + " (errno " + koffi.errno() + ")\\n"); process.exit(126); };
const caps = capList.split(",").filter(Boolean).map(Number);
for (const c of caps) if (prctl(24, ul, c, ul, 0, ul, 0, ul, 0) !== 0) die("dropping capability " + c + " from the bounding set");
prctl(47, ul, 4, ul, 0, ul, 0, ul, 0); // PR_CAP_AMBIENT_CLEAR_ALL (fails harmlessly on kernels without ambient caps)
prctl(1, ul, 9, ul, 0, ul, 0, ul, 0); // PR_SET_PDEATHSIG SIGKILL: the service dies with machined (kept across execve)
const hdr = Buffer.alloc(8); hdr.writeUInt32LE(0x20080522, 0);
const data = Buffer.alloc(24);
if (capget(hdr, data) !== 0) die("capget");
for (const c of caps) { const word = c >> 5, bit = 1 << (c & 31); data.writeUInt32LE((data.readUInt32LE(word * 12 + 8) & ~bit) >>> 0, word * 12 + 8); }
if (capset(hdr, data) !== 0) die("capset");
// Node marks its stdio descriptors close-on-exec at start-up; the executable must inherit them.
const fcntl = lib.func("int fcntl(int fd, int cmd, ...)");
for (const fd of [0, 1, 2]) fcntl(fd, 2, "int", 0); // F_SETFD: clear FD_CLOEXEC
const env = Object.entries(process.env).map(([k, v]) => k + "=" + v);
execve(file, [argv0, ...args, null], [...env, null]);
die("exec");
`;

/** The executable `file` resolves to through PATH (as execvp would), or undefined. */
export function resolveExecutable(file: string, path = process.env.PATH ?? ""): string | undefined {
  const candidates = file.includes("/") ? [file] : path.split(delimiter).filter(Boolean).map((d) => join(d, file));
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // next
    }
  }
  return undefined;
}

function koffiPath(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve("koffi");
  } catch {
    return undefined;
  }
}

/** setpriv's names for the capabilities it is asked to drop. */
const CAP_NAMES: Record<number, string> = { [CAP_SYS_MODULE]: "sys_module", [CAP_SYS_BOOT]: "sys_boot" };

let setprivPath: string | undefined | null = null;
function setpriv(): string | undefined {
  if (setprivPath === null) setprivPath = resolveExecutable("setpriv", `/usr/bin:/bin:/usr/sbin:/sbin:${process.env.PATH ?? ""}`);
  return setprivPath;
}

export interface DropOptions {
  /** The child's environment (its PATH resolves the executable). */
  env?: NodeJS.ProcessEnv;
  /** The uid the child runs as: a non-root child holds no capabilities to drop. */
  uid?: number;
  capabilities?: number[];
  /** Which wrapper; default setpriv when installed (and it knows every capability), else node. */
  wrapper?: "setpriv" | "node";
}

/**
 * The command that runs `file args` with the capabilities dropped: [node, -e, wrapper, --, ...] when this process
 * is root (only root holds them), else the command unchanged. An executable that cannot be found is left to the
 * normal spawn, so its error stays "fork/exec <file>: no such file or directory".
 */
export function withDroppedCapabilities(file: string, args: string[], o: DropOptions = {}): [string, string[]] {
  const caps = o.capabilities ?? DEFAULT_DROPPED_CAPABILITIES;
  if (process.getuid?.() !== 0 || (o.uid !== undefined && o.uid !== 0) || caps.length === 0) return [file, args];
  const exe = resolveExecutable(file, o.env?.PATH ?? process.env.PATH);
  if (!exe) return [file, args];
  const sp = setpriv();
  const names = caps.map((c) => CAP_NAMES[c]);
  if ((o.wrapper ?? "setpriv") === "setpriv" && sp && names.every(Boolean)) {
    const drop = names.map((n) => `-${n}`).join(",");
    // --pdeathsig: if machined itself dies (a crash in local mode), the kernel kills the service too, so no
    // containerd or etcd outlives the agent that supervised it (kept across execve).
    return [sp, ["--bounding-set", drop, "--inh-caps", drop, "--pdeathsig", "KILL", "--", file, ...args]];
  }
  const koffi = koffiPath();
  if (!koffi) return [file, args];
  return [process.execPath, ["-e", WRAPPER, "--", koffi, caps.join(","), exe, file, ...args]];
}

/** Capability sets of a process, from /proc/<pid>/status (bitmasks). */
export function parseCapabilities(status: string): { inheritable: bigint; permitted: bigint; effective: bigint; bounding: bigint; ambient: bigint } {
  const get = (k: string) => {
    const m = new RegExp(`^${k}:\\s*([0-9a-f]+)$`, "m").exec(status);
    return m ? BigInt(`0x${m[1]}`) : 0n;
  };
  return { inheritable: get("CapInh"), permitted: get("CapPrm"), effective: get("CapEff"), bounding: get("CapBnd"), ambient: get("CapAmb") };
}
