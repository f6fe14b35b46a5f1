/**
 * Raw libc bindings through koffi (FFI). Each function returns the C result; on -1 the caller reads `errno()`.
 *
 * Why koffi and not a C addon (measured on this host, Node 20.20, npm 11): koffi 2.16.3 ships prebuilt
 * linux_x64 and linux_arm64 (glibc and musl) binaries inside its npm tarball, so it works with install scripts
 * disabled, needs no compiler or node headers at image build, and loads in ~17 ms. A node-gyp addon would need
 * gcc + /usr/include/node at build time and a separate cross build for arm64.
 *
 * koffi is loaded lazily with createRequire so code that only uses the fakes never maps native code. For a
 * bundled build, keep koffi external (esbuild --external:koffi) and ship its build/koffi/linux_<arch> folder.
 */
import { createRequire } from "node:module";

export interface LibcBindings {
  getpid(): number;
  mount(source: string, target: string, fstype: string | null, flags: number, data: string | null): number;
  umount2(target: string, flags: number): number;
  sync(): void;
  /** runs sync(2) on koffi's worker thread */
  syncAsync(cb: (err: unknown) => void): void;
  reboot(howto: number): number;
  /** statusOut[0] receives the wait status */
  waitpid(pid: number, statusOut: number[], options: number): number;
  prctl(option: number, arg2: number): number;
  finitModule(fd: number, params: string, flags: number): number;
  sethostname(name: string, len: number): number;
  chroot(path: string): number;
  /** pivot_root(2) (no glibc wrapper: through syscall(2)) */
  pivotRoot(newRoot: string, putOld: string): number;
  /** ioctl with a pointer argument (a struct in `arg`, read and written in place) */
  ioctlPtr(fd: number, request: number, arg: Buffer): number;
  /** ioctl with an integer argument */
  ioctlInt(fd: number, request: number, arg: number): number;
  /** errno saved by koffi right after the last call on this thread */
  errno(): number;
}

// glibc has no finit_module wrapper, so it goes through syscall(2); the number differs per arch.
const SYS_finit_module: Partial<Record<string, number>> = { x64: 313, arm64: 273 };
const SYS_pivot_root: Partial<Record<string, number>> = { x64: 155, arm64: 41 };

interface KoffiLike {
  load(path: string | null): { func(decl: string): KoffiFn };
  errno(): number;
}
type KoffiFn = ((...args: unknown[]) => unknown) & { async(...args: unknown[]): void };

export function loadLibc(): LibcBindings {
  const koffi = createRequire(import.meta.url)("koffi") as KoffiLike;
  // dlopen(NULL): node links libc dynamically, so its symbols resolve on glibc and musl alike.
  const lib = koffi.load(null);
  const f = (decl: string) => lib.func(decl);
  const getpid = f("int getpid(void)");
  const mount = f(
    "int mount(const char *source, const char *target, const char *fstype, unsigned long flags, const char *data)",
  );
  const umount2 = f("int umount2(const char *target, int flags)");
  const sync = f("void sync(void)");
  const reboot = f("int reboot(int howto)");
  const waitpid = f("int waitpid(int pid, _Out_ int *status, int options)");
  // prctl is variadic in glibc; koffi passes variadic arguments as (type, value) pairs.
  const prctl = f("int prctl(int option, ...)");
  const syscall = f("long syscall(long number, ...)");
  const sethostname = f("int sethostname(const char *name, size_t len)");
  const chroot = f("int chroot(const char *path)");
  const ioctlPtr = f("int ioctl(int fd, unsigned long request, void *arg)");
  const ioctlInt = f("int ioctl(int fd, unsigned long request, unsigned long arg)");
  const ul = "unsigned long";
  return {
    getpid: () => getpid() as number,
    mount: (s, t, fs, fl, d) => mount(s, t, fs, fl, d) as number,
    umount2: (t, fl) => umount2(t, fl) as number,
    sync: () => void sync(),
    syncAsync: (cb) => sync.async((err: unknown) => cb(err)),
    reboot: (howto) => reboot(howto | 0) as number,
    waitpid: (pid, out, opts) => waitpid(pid, out, opts) as number,
    prctl: (opt, a2) => prctl(opt, ul, a2, ul, 0, ul, 0, ul, 0) as number,
    finitModule: (fd, params, flags) => {
      const nr = SYS_finit_module[process.arch];
      if (nr === undefined) throw new Error(`finit_module: unsupported architecture ${process.arch}`);
      return Number(syscall(nr, "int", fd, "const char *", params, "int", flags));
    },
    sethostname: (name, len) => sethostname(name, len) as number,
    chroot: (p) => chroot(p) as number,
    pivotRoot: (n, o) => {
      const nr = SYS_pivot_root[process.arch];
      if (nr === undefined) throw new Error(`pivot_root: unsupported architecture ${process.arch}`);
      return Number(syscall(nr, "const char *", n, "const char *", o));
    },
    ioctlPtr: (fd, req, arg) => ioctlPtr(fd, req, arg) as number,
    ioctlInt: (fd, req, arg) => ioctlInt(fd, req, arg) as number,
    errno: () => koffi.errno(),
  };
}
