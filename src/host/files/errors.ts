/**
 * Filesystem errors worded as Go's os package words them ("lstat /x: no such file or directory"), because
 * talosctl prints the API's error strings verbatim and users compare them with upstream's.
 */
import type { FsError } from "./types.js";

/** strerror(3) texts (glibc/musl agree on these), which Go prints; libuv's own texts differ ("i/o error"). */
const STRERROR: Record<string, string> = {
  EPERM: "operation not permitted",
  ENOENT: "no such file or directory",
  ESRCH: "no such process",
  EINTR: "interrupted system call",
  EIO: "input/output error",
  ENXIO: "no such device or address",
  EBADF: "bad file descriptor",
  EAGAIN: "resource temporarily unavailable",
  ENOMEM: "cannot allocate memory",
  EACCES: "permission denied",
  EBUSY: "device or resource busy",
  EEXIST: "file exists",
  EXDEV: "invalid cross-device link",
  ENODEV: "no such device",
  ENOTDIR: "not a directory",
  EISDIR: "is a directory",
  EINVAL: "invalid argument",
  EMFILE: "too many open files",
  ENOSPC: "no space left on device",
  EROFS: "read-only file system",
  ELOOP: "too many levels of symbolic links",
  ENAMETOOLONG: "file name too long",
  ENOTEMPTY: "directory not empty",
  EOPNOTSUPP: "operation not supported",
  ENOTSUP: "operation not supported",
  ENODATA: "no data available",
  ENOEXEC: "exec format error",
  ENOTSOCK: "socket operation on non-socket",
  ECONNREFUSED: "connection refused",
};

/** The strerror text for an errno name, or undefined when we do not know it. */
export function errnoText(code: string): string | undefined {
  return STRERROR[code];
}

/** Node's syscall names where Go's os package names the operation differently. */
const GO_OP: Record<string, string> = { scandir: "open", opendir: "open" };

/**
 * `op path: text` for a Node filesystem error; `path` overrides the error's own path (Node reports the
 * argument, Go the same). Errors that are not filesystem errors keep their message.
 */
export function goErrorText(err: unknown, path?: string): string {
  const e = err as FsError;
  if (!e?.code || !e.syscall) return (err as Error)?.message ?? String(err);
  const text = STRERROR[e.code] ?? /^E\w+: ([^,]+)/.exec(e.message)?.[1] ?? e.code;
  const op = GO_OP[e.syscall] ?? e.syscall;
  const p = path ?? e.path;
  return p ? `${op} ${p}: ${text}` : `${op}: ${text}`;
}

/** A Node-shaped filesystem error (what MemoryFiles and injected faults throw). */
export function fsError(code: string, syscall: string, path: string): FsError {
  const err = new Error(`${code}: ${STRERROR[code] ?? code}, ${syscall} '${path}'`) as FsError;
  err.code = code;
  err.syscall = syscall;
  err.path = path;
  return err;
}
