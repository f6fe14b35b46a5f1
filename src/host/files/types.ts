/**
 * The filesystem as the layers above use it. `hostFiles` (real.ts) is the machine's own filesystem;
 * `MemoryFiles` (memory.ts) is an in-memory tree for tests, able to inject errors the real one only
 * shows on pseudo-filesystems (EINVAL on a cgroup file read, an entry that vanishes between readdir and lstat).
 *
 * The shapes are the subset of node:fs callers use, so Node's own Stats, Dirent and FileHandle satisfy them.
 */

export interface FileStat {
  /** st_mode: type and permission bits. */
  readonly mode: number;
  readonly size: number;
  readonly uid: number;
  readonly gid: number;
  readonly rdev: number;
  readonly mtimeMs: number;
  readonly mtime: Date;
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
}

export interface DirEntry {
  readonly name: string;
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}

/** An open file: positional reads and writes (position null: at the current offset / append). */
export interface FileHandle {
  read(buffer: Uint8Array, offset: number, length: number, position: number | null): Promise<{ bytesRead: number }>;
  write(data: Uint8Array, offset?: number, length?: number, position?: number | null): Promise<{ bytesWritten: number }>;
  stat(): Promise<FileStat>;
  /** fsync: after it, a power cut cannot lose what was written (on a directory: its entries). */
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** "r" read, "r+" read/write, "w" create/truncate, "wx" create only, "a" create/append. */
export type OpenFlags = "r" | "r+" | "w" | "wx" | "a";

export interface WriteOptions {
  mode?: number;
  /** "w" (default) replaces, "wx" refuses an existing file (EEXIST), "a" appends. */
  flag?: "w" | "wx" | "a";
}

export interface ReadStreamOptions {
  /** Bytes per chunk (default 64 KiB). */
  chunkSize?: number;
  signal?: AbortSignal;
}

export interface Files {
  readFile(path: string): Promise<Buffer>;
  readFile(path: string, encoding: "utf8"): Promise<string>;
  /** Not atomic: for crash-safe replacement use writeFileAtomic (atomic.ts). */
  writeFile(path: string, data: Uint8Array | string, opts?: WriteOptions): Promise<void>;
  stat(path: string): Promise<FileStat>;
  lstat(path: string): Promise<FileStat>;
  /** Entry names, unsorted (as the kernel returns them). */
  readdir(path: string): Promise<string[]>;
  /** Entries with their type (without following symlinks). */
  entries(path: string): Promise<DirEntry[]>;
  readlink(path: string): Promise<string>;
  realpath(path: string): Promise<string>;
  mkdir(path: string, opts?: { recursive?: boolean; mode?: number }): Promise<void>;
  rm(path: string, opts?: { recursive?: boolean; force?: boolean }): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  copyFile(from: string, to: string): Promise<void>;
  truncate(path: string, length: number): Promise<void>;
  /** The path exists (following symlinks). */
  exists(path: string): Promise<boolean>;
  /** The path exists and this process may execute it. */
  isExecutable(path: string): Promise<boolean>;
  /** A new private folder under the system's temporary folder, named `<prefix>XXXXXX`. */
  tempDir(prefix: string): Promise<string>;
  /** Size of the filesystem holding `path`. */
  statfs(path: string): Promise<{ blocks: number; bsize: number }>;
  open(path: string, flags: OpenFlags, mode?: number): Promise<FileHandle>;
  /** The file's bytes in chunks; errors (a missing file, EIO) surface on iteration. */
  readStream(path: string, opts?: ReadStreamOptions): AsyncIterable<Buffer>;
}

/** A filesystem error as Node reports it: `code` (ENOENT, ...), the failing `syscall` and `path`. */
export interface FsError extends Error {
  code?: string;
  syscall?: string;
  path?: string;
}

export function errorCode(err: unknown): string | undefined {
  return (err as FsError | undefined)?.code;
}

export const isNotFound = (err: unknown) => errorCode(err) === "ENOENT";
