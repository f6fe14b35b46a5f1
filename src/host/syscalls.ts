/**
 * The syscalls a PID 1 needs that Node itself cannot make (mount, reboot, targeted waitpid, ...).
 * Callers depend on the `Syscalls` interface; `realSyscalls()` binds libc through koffi
 * (src/host/native/libc.ts) and `FakeSyscalls` records calls for unit tests.
 */
import { constants as osConstants } from "node:os";
import { openSync, closeSync } from "node:fs";
import { loadLibc, type LibcBindings } from "./native/libc.js";

export type RebootCommand = "restart" | "poweroff" | "halt";

export interface WaitResult {
  pid: number;
  /** raw wait status, decode with decodeWaitStatus */
  status: number;
}

export interface Syscalls {
  getpid(): number;
  /** flags: MS_* bit mask; data: fs-specific options string or null */
  mount(source: string, target: string, fstype: string | null, flags: number, data: string | null): void;
  umount(target: string, flags?: number): void;
  sync(): void;
  /** sync(2) on a worker thread, so a hung disk cannot freeze the event loop; callers race it with a timeout */
  syncAsync(): Promise<void>;
  /** never returns on success; refuses (EPERM) unless getpid() == 1. Does not sync: callers do a bounded sync first */
  reboot(cmd: RebootCommand): void;
  /** waitpid(pid, WNOHANG) for one specific pid (never -1); null while the child is still running */
  waitpidNoHang(pid: number): WaitResult | null;
  /** prctl(PR_SET_CHILD_SUBREAPER, 1) */
  setChildSubreaper(): void;
  /** finit_module(2) on the file at `path` with module parameters like "foo=1 bar=2" */
  finitModule(path: string, params: string): void;
  sethostname(name: string): void;
  /** chroot(2); PID 1 uses it once, to switch from the initramfs to rootfs.sqsh */
  chroot(path: string): void;
  /** pivot_root(2): the local-mode sandbox makes its private root the process's root (like a container runtime) */
  pivotRoot(newRoot: string, putOld: string): void;
  /**
   * ioctl(2): `arg` is either a buffer (passed by pointer; the kernel may write into it) or an integer.
   * Returns the (non-negative) result; -1 becomes a SyscallError.
   */
  ioctl(fd: number, request: number, arg: Buffer | number): number;
}

/** mount(2) flags from <sys/mount.h> */
export const MS = {
  RDONLY: 0x1,
  NOSUID: 0x2,
  NODEV: 0x4,
  NOEXEC: 0x8,
  REMOUNT: 0x20,
  BIND: 0x1000,
  MOVE: 0x2000,
  REC: 0x4000,
  PRIVATE: 0x40000,
  RELATIME: 0x200000,
} as const;

/** umount2(2) flags */
export const MNT = { FORCE: 0x1, DETACH: 0x2 } as const;

const errnoNames = new Map<number, string>(
  Object.entries(osConstants.errno).map(([name, num]) => [num, name] as [number, string]),
);

/** A failed syscall: `code` is the errno name (e.g. "EPERM") like Node's own system errors. */
export class SyscallError extends Error {
  readonly code: string;
  constructor(
    readonly syscall: string,
    readonly errno: number,
    detail = "",
  ) {
    const code = errnoNames.get(errno) ?? `errno ${errno}`;
    super(`${syscall}${detail ? ` ${detail}` : ""} failed: ${code}`);
    this.name = "SyscallError";
    this.code = code;
  }
}

export function decodeWaitStatus(status: number): { code: number | null; signal: number | null } {
  const termSig = status & 0x7f;
  if (termSig === 0) return { code: (status >> 8) & 0xff, signal: null };
  if (termSig !== 0x7f) return { code: null, signal: termSig };
  return { code: null, signal: null }; // stopped/continued: not reported with WNOHANG and no WUNTRACED
}

const RB = { restart: 0x01234567, poweroff: 0x4321fedc, halt: 0xcdef0123 } as const; // <sys/reboot.h>
const WNOHANG = 1;
const PR_SET_CHILD_SUBREAPER = 36;

/** Turns the raw libc results (-1 + errno) into exceptions and adds the PID-1 guard on reboot. */
class LibcSyscalls implements Syscalls {
  constructor(private readonly c: LibcBindings) {}

  private check(rc: number, syscall: string, detail = ""): void {
    if (rc === -1) throw new SyscallError(syscall, this.c.errno(), detail);
  }
  getpid(): number {
    return this.c.getpid();
  }
  mount(source: string, target: string, fstype: string | null, flags: number, data: string | null): void {
    this.check(this.c.mount(source, target, fstype, flags, data), "mount", `${fstype ?? source} on ${target}`);
  }
  umount(target: string, flags = 0): void {
    this.check(this.c.umount2(target, flags), "umount2", target);
  }
  sync(): void {
    this.c.sync();
  }
  syncAsync(): Promise<void> {
    return new Promise((resolve, reject) => this.c.syncAsync((err) => (err ? reject(err) : resolve())));
  }
  reboot(cmd: RebootCommand): void {
    // Two independent checks (libc getpid and Node's pid): outside PID 1 reboot(2) would hit the whole host.
    if (this.c.getpid() !== 1 || process.pid !== 1) {
      throw new SyscallError("reboot", osConstants.errno.EPERM, `(${cmd}) refused: not PID 1`);
    }
    this.check(this.c.reboot(RB[cmd]), "reboot", cmd);
  }
  waitpidNoHang(pid: number): WaitResult | null {
    // pid <= 0 would wait for any child (or a group) and could steal libuv's children.
    if (!Number.isInteger(pid) || pid <= 0) throw new RangeError(`waitpidNoHang: invalid pid ${pid}`);
    const status = [0];
    const rc = this.c.waitpid(pid, status, WNOHANG);
    this.check(rc, "waitpid", String(pid));
    return rc === 0 ? null : { pid: rc, status: status[0] };
  }
  setChildSubreaper(): void {
    this.check(this.c.prctl(PR_SET_CHILD_SUBREAPER, 1), "prctl(PR_SET_CHILD_SUBREAPER)");
  }
  finitModule(path: string, params: string): void {
    const fd = openSync(path, "r"); // libuv opens with O_CLOEXEC, so spawned children never inherit it
    try {
      this.check(this.c.finitModule(fd, params, 0), "finit_module", path);
    } finally {
      closeSync(fd);
    }
  }
  sethostname(name: string): void {
    this.check(this.c.sethostname(name, Buffer.byteLength(name)), "sethostname", name);
  }
  pivotRoot(newRoot: string, putOld: string): void {
    this.check(this.c.pivotRoot(newRoot, putOld), "pivot_root", `${newRoot} ${putOld}`);
  }
  chroot(path: string): void {
    this.check(this.c.chroot(path), "chroot", path);
  }
  ioctl(fd: number, request: number, arg: Buffer | number): number {
    const rc = typeof arg === "number" ? this.c.ioctlInt(fd, request, arg) : this.c.ioctlPtr(fd, request, arg);
    this.check(rc, "ioctl", `0x${request.toString(16)} on fd ${fd}`);
    return rc;
  }
}

let real: Syscalls | undefined;
/** The libc-backed implementation; koffi is loaded on first use so code using the fake never maps native code. */
export function realSyscalls(): Syscalls {
  real ??= new LibcSyscalls(loadLibc());
  return real;
}

export interface FakeCall {
  name: keyof Syscalls;
  args: unknown[];
  /** errno name when the call was made to fail */
  error?: string;
}

/**
 * In-memory Syscalls for tests: records every call, pretends to succeed, and lets a test inject
 * errors (`failWith`) or the pid (`pid`). `waitResults` maps a pid to the status waitpid will report once.
 */
export class FakeSyscalls implements Syscalls {
  readonly calls: FakeCall[] = [];
  pid = 4242;
  hostname = "";
  readonly failWith = new Map<keyof Syscalls, string>();
  readonly waitResults = new Map<number, number>();

  private record(name: keyof Syscalls, args: unknown[]): void {
    const code = this.failWith.get(name);
    this.calls.push(code ? { name, args, error: code } : { name, args });
    if (code) throw new SyscallError(name, osConstants.errno[code as keyof typeof osConstants.errno] ?? -1);
  }

  /** arguments of the successful calls to `name` */
  callsOf(name: keyof Syscalls): unknown[][] {
    return this.calls.filter((c) => c.name === name && !c.error).map((c) => c.args);
  }

  getpid(): number {
    return this.pid;
  }
  mount(source: string, target: string, fstype: string | null, flags: number, data: string | null): void {
    this.record("mount", [source, target, fstype, flags, data]);
  }
  umount(target: string, flags = 0): void {
    this.record("umount", [target, flags]);
  }
  sync(): void {
    this.record("sync", []);
  }
  async syncAsync(): Promise<void> {
    this.record("syncAsync", []);
  }
  reboot(cmd: RebootCommand): void {
    this.record("reboot", [cmd]);
    if (this.pid !== 1) throw new SyscallError("reboot", osConstants.errno.EPERM, "(not PID 1)");
  }
  waitpidNoHang(pid: number): WaitResult | null {
    this.record("waitpidNoHang", [pid]);
    const status = this.waitResults.get(pid);
    if (status === undefined) throw new SyscallError("waitpid", osConstants.errno.ECHILD);
    this.waitResults.delete(pid);
    return { pid, status };
  }
  setChildSubreaper(): void {
    this.record("setChildSubreaper", []);
  }
  finitModule(path: string, params: string): void {
    this.record("finitModule", [path, params]);
  }
  sethostname(name: string): void {
    this.record("sethostname", [name]);
    this.hostname = name;
  }
  pivotRoot(newRoot: string, putOld: string): void {
    this.record("pivotRoot", [newRoot, putOld]);
  }
  chroot(path: string): void {
    this.record("chroot", [path]);
  }
  /** results for ioctl by request number (default 0) */
  readonly ioctlResults = new Map<number, number>();
  ioctl(fd: number, request: number, arg: Buffer | number): number {
    this.record("ioctl", [fd, request, arg]);
    return this.ioctlResults.get(request) ?? 0;
  }
}
