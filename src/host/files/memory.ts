/**
 * An in-memory filesystem for tests of the layers above src/host: directories, files, symlinks and special
 * files in one tree, with Node's error codes. `fail()` injects the errors pseudo-filesystems produce (EINVAL on
 * a cgroup read, EIO on /proc/<pid>/mem, an entry that vanishes between readdir and lstat), and `ops` records
 * every mutation and fsync in order, so a test can check a write protocol (temp, fsync, rename, fsync folder).
 */
import { posix } from "node:path";
import { fsError } from "./errors.js";
import type { DirEntry, Files, FileHandle, FileStat, OpenFlags, ReadStreamOptions, WriteOptions } from "./types.js";

type Kind = "file" | "dir" | "symlink" | "fifo" | "socket" | "char" | "block";

interface Inode {
  kind: Kind;
  mode: number;
  uid: number;
  gid: number;
  mtimeMs: number;
  data: Buffer;
  /** Reports size 0 whatever it holds, as /proc and cgroup files do. */
  pseudo: boolean;
  children: Map<string, Inode>;
  target: string;
}

const TYPE_BITS: Record<Kind, number> = {
  file: 0o100000,
  dir: 0o040000,
  symlink: 0o120000,
  fifo: 0o010000,
  socket: 0o140000,
  char: 0o020000,
  block: 0o060000,
};

export type FaultOp = "lstat" | "stat" | "readdir" | "open" | "read" | "write" | "rename" | "rm" | "mkdir" | "readlink";

const SYSCALL: Record<FaultOp, string> = {
  lstat: "lstat",
  stat: "stat",
  readdir: "scandir",
  open: "open",
  read: "read",
  write: "write",
  rename: "rename",
  rm: "rm",
  mkdir: "mkdir",
  readlink: "readlink",
};

function statOf(n: Inode): FileStat {
  const is = (k: Kind) => () => n.kind === k;
  return {
    mode: TYPE_BITS[n.kind] | (n.mode & 0o7777),
    size: n.kind === "file" ? (n.pseudo ? 0 : n.data.length) : n.kind === "dir" ? 4096 : n.kind === "symlink" ? Buffer.byteLength(n.target) : 0,
    uid: n.uid,
    gid: n.gid,
    rdev: 0,
    mtimeMs: n.mtimeMs,
    mtime: new Date(n.mtimeMs),
    isFile: is("file"),
    isDirectory: is("dir"),
    isSymbolicLink: is("symlink"),
    isFIFO: is("fifo"),
    isSocket: is("socket"),
    isCharacterDevice: is("char"),
    isBlockDevice: is("block"),
  };
}

export interface AddOptions {
  mode?: number;
  uid?: number;
  gid?: number;
  mtime?: Date;
  /** The file reports size 0 whatever it holds (as /proc and cgroup files do). */
  pseudo?: boolean;
}

export class MemoryFiles implements Files {
  private readonly root: Inode;
  private readonly faults = new Map<string, string>();
  /** Mutations and fsyncs in order: "write /a", "sync /a", "rename /a -> /b", "mkdir /d", "rm /x", "truncate /a". */
  readonly ops: string[] = [];
  /** What statfs reports for every path. */
  fsSize = { blocks: 1 << 20, bsize: 4096 };
  private tempCounter = 0;

  constructor(private readonly now: () => number = Date.now) {
    this.root = this.inode("dir", 0o755);
  }

  // ------------------------------------------------------------------ test setup

  /** A regular file (parents are created). */
  addFile(path: string, data: Uint8Array | string, o: AddOptions = {}): this {
    const n = this.place(path, "file", o.mode ?? 0o644, o);
    n.data = Buffer.from(typeof data === "string" ? Buffer.from(data) : data);
    return this;
  }

  addDir(path: string, o: AddOptions = {}): this {
    const p = norm(path);
    if (p !== "/") this.place(p, "dir", o.mode ?? 0o755, o);
    return this;
  }

  addSymlink(path: string, target: string, o: AddOptions = {}): this {
    this.place(path, "symlink", 0o777, o).target = target;
    return this;
  }

  /** A FIFO, socket or device node (no data). */
  addSpecial(path: string, kind: "fifo" | "socket" | "char" | "block", o: AddOptions = {}): this {
    this.place(path, kind, o.mode ?? 0o600, o);
    return this;
  }

  /** From now on `op` on exactly `path` fails with `code` (e.g. fail("/sys/x", "read", "EINVAL")). */
  fail(path: string, op: FaultOp, code: string): this {
    this.faults.set(`${op} ${norm(path)}`, code);
    return this;
  }

  /** The bytes of a file, or undefined (no symlinks followed); for assertions. */
  contents(path: string): Buffer | undefined {
    const n = this.lookup(norm(path), false);
    return n?.kind === "file" ? Buffer.from(n.data) : undefined;
  }

  /** Every path in the tree (depth first, sorted), for assertions. */
  paths(): string[] {
    const out: string[] = [];
    const visit = (dir: Inode, at: string) => {
      for (const name of [...dir.children.keys()].sort()) {
        const p = posix.join(at, name);
        out.push(p);
        const c = dir.children.get(name)!;
        if (c.kind === "dir") visit(c, p);
      }
    };
    visit(this.root, "/");
    return out;
  }

  // ------------------------------------------------------------------ Files

  readFile(path: string): Promise<Buffer>;
  readFile(path: string, encoding: "utf8"): Promise<string>;
  async readFile(path: string, encoding?: "utf8"): Promise<Buffer | string> {
    const p = norm(path);
    this.fault("open", p);
    const n = this.resolve(p, true, "open");
    if (n.kind === "dir") throw fsError("EISDIR", "read", p);
    this.fault("read", p);
    const b = Buffer.from(n.data);
    return encoding ? b.toString("utf8") : b;
  }

  async writeFile(path: string, data: Uint8Array | string, opts: WriteOptions = {}): Promise<void> {
    const fh = await this.open(path, opts.flag ?? "w", opts.mode);
    try {
      await fh.write(typeof data === "string" ? Buffer.from(data) : data);
    } finally {
      await fh.close();
    }
  }

  async stat(path: string): Promise<FileStat> {
    const p = norm(path);
    this.fault("stat", p);
    return statOf(this.resolve(p, true, "stat"));
  }

  async lstat(path: string): Promise<FileStat> {
    const p = norm(path);
    this.fault("lstat", p);
    return statOf(this.resolve(p, false, "lstat"));
  }

  async readdir(path: string): Promise<string[]> {
    return [...this.dirOf(path).children.keys()];
  }

  async entries(path: string): Promise<DirEntry[]> {
    return [...this.dirOf(path).children.entries()].map(([name, n]) => ({
      name,
      isFile: () => n.kind === "file",
      isDirectory: () => n.kind === "dir",
      isSymbolicLink: () => n.kind === "symlink",
    }));
  }

  async readlink(path: string): Promise<string> {
    const p = norm(path);
    this.fault("readlink", p);
    const n = this.resolve(p, false, "readlink");
    if (n.kind !== "symlink") throw fsError("EINVAL", "readlink", p);
    return n.target;
  }

  async realpath(path: string): Promise<string> {
    return this.canonical(norm(path), "realpath");
  }

  async mkdir(path: string, opts: { recursive?: boolean; mode?: number } = {}): Promise<void> {
    const p = norm(path);
    this.fault("mkdir", p);
    if (opts.recursive) {
      let cur = this.root;
      let at = "/";
      for (const part of parts(p)) {
        at = posix.join(at, part);
        let next = cur.children.get(part);
        if (next?.kind === "symlink") next = this.resolve(at, true, "mkdir");
        if (!next) {
          next = this.inode("dir", opts.mode ?? 0o755);
          cur.children.set(part, next);
          this.ops.push(`mkdir ${at}`);
        } else if (next.kind !== "dir") throw fsError("ENOTDIR", "mkdir", p);
        cur = next;
      }
      return;
    }
    const { parent, name } = this.parentOf(p, "mkdir");
    if (parent.children.has(name)) throw fsError("EEXIST", "mkdir", p);
    parent.children.set(name, this.inode("dir", opts.mode ?? 0o755));
    this.ops.push(`mkdir ${p}`);
  }

  async rm(path: string, opts: { recursive?: boolean; force?: boolean } = {}): Promise<void> {
    const p = norm(path);
    this.fault("rm", p);
    const n = this.lookup(p, false);
    if (!n) {
      if (opts.force) return;
      throw fsError("ENOENT", "rm", p);
    }
    if (n.kind === "dir" && !opts.recursive) throw fsError("EISDIR", "rm", p);
    if (p === "/") throw fsError("EPERM", "rm", p);
    const { parent, name } = this.parentOf(p, "rm");
    parent.children.delete(name);
    this.ops.push(`rm ${p}`);
  }

  async rename(from: string, to: string): Promise<void> {
    const a = norm(from);
    const b = norm(to);
    this.fault("rename", a);
    const src = this.resolve(a, false, "rename");
    const dst = this.parentOf(b, "rename");
    const existing = dst.parent.children.get(dst.name);
    if (existing?.kind === "dir" && src.kind !== "dir") throw fsError("EISDIR", "rename", b);
    if (existing?.kind === "dir" && existing.children.size > 0) throw fsError("ENOTEMPTY", "rename", b);
    if (existing && existing.kind !== "dir" && src.kind === "dir") throw fsError("ENOTDIR", "rename", b);
    const from_ = this.parentOf(a, "rename");
    from_.parent.children.delete(from_.name);
    dst.parent.children.set(dst.name, src);
    this.ops.push(`rename ${a} -> ${b}`);
  }

  async copyFile(from: string, to: string): Promise<void> {
    await this.writeFile(to, await this.readFile(from));
  }

  async truncate(path: string, length: number): Promise<void> {
    const p = norm(path);
    const n = this.resolve(p, true, "open");
    if (n.kind !== "file") throw fsError("EISDIR", "open", p);
    n.data = resize(n.data, length);
    n.mtimeMs = this.now();
    this.ops.push(`truncate ${p} ${length}`);
  }

  async exists(path: string): Promise<boolean> {
    try {
      this.resolve(norm(path), true, "access");
      return true;
    } catch {
      return false;
    }
  }

  async isExecutable(path: string): Promise<boolean> {
    try {
      return (this.resolve(norm(path), true, "access").mode & 0o111) !== 0;
    } catch {
      return false;
    }
  }

  async tempDir(prefix: string): Promise<string> {
    await this.mkdir("/tmp", { recursive: true });
    const p = `/tmp/${prefix}${String(++this.tempCounter).padStart(6, "0")}`;
    await this.mkdir(p);
    return p;
  }

  async statfs(path: string): Promise<{ blocks: number; bsize: number }> {
    this.resolve(norm(path), true, "statfs");
    return { ...this.fsSize };
  }

  async open(path: string, flags: OpenFlags, mode = 0o666): Promise<FileHandle> {
    const p = norm(path);
    this.fault("open", p);
    let n = this.lookup(p, true);
    if (n && flags === "wx") throw fsError("EEXIST", "open", p);
    if (!n) {
      if (flags === "r" || flags === "r+") throw fsError("ENOENT", "open", p);
      const { parent, name } = this.parentOf(p, "open");
      n = this.inode("file", mode);
      parent.children.set(name, n);
      this.ops.push(`create ${p}`);
    } else if (n.kind === "dir" && flags !== "r") {
      throw fsError("EISDIR", "open", p);
    } else if (flags === "w" && n.kind === "file") {
      n.data = Buffer.alloc(0);
    }
    return this.handle(p, n, flags);
  }

  async *readStream(path: string, opts: ReadStreamOptions = {}): AsyncGenerator<Buffer> {
    const chunk = opts.chunkSize ?? 64 * 1024;
    const fh = await this.open(path, "r");
    try {
      const buf = Buffer.alloc(chunk);
      for (let pos = 0; !opts.signal?.aborted; ) {
        const { bytesRead } = await fh.read(buf, 0, chunk, pos);
        if (bytesRead === 0) return;
        pos += bytesRead;
        yield Buffer.from(buf.subarray(0, bytesRead));
      }
    } finally {
      await fh.close();
    }
  }

  // ------------------------------------------------------------------ internals

  private handle(path: string, n: Inode, flags: OpenFlags): FileHandle {
    let offset = 0;
    let closed = false;
    const check = () => {
      if (closed) throw fsError("EBADF", "read", path);
    };
    return {
      read: async (buffer, off, length, position) => {
        check();
        if (n.kind === "dir") throw fsError("EISDIR", "read", path);
        this.fault("read", path);
        const at = position ?? offset;
        const src = n.data.subarray(Math.min(at, n.data.length), Math.min(at + length, n.data.length));
        Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength).set(src, off);
        if (position === null) offset += src.length;
        return { bytesRead: src.length };
      },
      write: async (data, off = 0, length = data.length - off, position = null) => {
        check();
        if (flags === "r") throw fsError("EBADF", "write", path);
        this.fault("write", path);
        const bytes = data.subarray(off, off + length);
        const at = flags === "a" ? n.data.length : (position ?? offset);
        if (at + bytes.length > n.data.length) n.data = resize(n.data, at + bytes.length);
        n.data.set(bytes, at);
        if (position === null && flags !== "a") offset = at + bytes.length;
        n.mtimeMs = this.now();
        this.ops.push(`write ${path}`);
        return { bytesWritten: bytes.length };
      },
      stat: async () => statOf(n),
      sync: async () => {
        check();
        this.ops.push(`sync ${path}`);
      },
      close: async () => {
        closed = true;
      },
    };
  }

  private inode(kind: Kind, mode: number, o: AddOptions = {}): Inode {
    return {
      kind,
      mode,
      uid: o.uid ?? 0,
      gid: o.gid ?? 0,
      mtimeMs: o.mtime?.getTime() ?? this.now(),
      data: Buffer.alloc(0),
      pseudo: o.pseudo ?? false,
      children: new Map(),
      target: "",
    };
  }

  private place(path: string, kind: Kind, mode: number, o: AddOptions): Inode {
    const p = norm(path);
    const dir = posix.dirname(p);
    if (dir !== "/") {
      // parents as plain folders, without recording ops (this is setup, not the code under test)
      let cur = this.root;
      for (const part of parts(dir)) {
        let next = cur.children.get(part);
        if (!next) cur.children.set(part, (next = this.inode("dir", 0o755)));
        if (next.kind !== "dir") throw new Error(`MemoryFiles: ${part} in ${p} is not a folder`);
        cur = next;
      }
    }
    const { parent, name } = this.parentOf(p, "open");
    const n = this.inode(kind, mode, o);
    parent.children.set(name, n);
    return n;
  }

  private fault(op: FaultOp, path: string): void {
    const code = this.faults.get(`${op} ${path}`);
    if (code) throw fsError(code, SYSCALL[op], path);
  }

  private dirOf(path: string): Inode {
    const p = norm(path);
    this.fault("readdir", p);
    const n = this.resolve(p, true, "scandir");
    if (n.kind !== "dir") throw fsError("ENOTDIR", "scandir", p);
    return n;
  }

  /** The inode at `path`, or undefined when a component is missing; throws ELOOP/ENOTDIR like the kernel. */
  private lookup(path: string, follow: boolean, depth = 0): Inode | undefined {
    try {
      return this.resolve(path, follow, "stat", depth);
    } catch (err) {
      if ((err as { code?: string }).code === "ENOENT") return undefined;
      throw err;
    }
  }

  private resolve(path: string, followLast: boolean, syscall: string, depth = 0): Inode {
    return this.walkTo(path, followLast, syscall, depth).node;
  }

  private canonical(path: string, syscall: string): string {
    return this.walkTo(path, true, syscall, 0).at;
  }

  private walkTo(path: string, followLast: boolean, syscall: string, depth: number): { node: Inode; at: string } {
    if (depth > 40) throw fsError("ELOOP", syscall, path);
    let cur = this.root;
    let at = "/";
    const list = parts(path);
    for (let i = 0; i < list.length; i++) {
      if (cur.kind !== "dir") throw fsError("ENOTDIR", syscall, path);
      const next = cur.children.get(list[i]);
      if (!next) throw fsError("ENOENT", syscall, path);
      const last = i === list.length - 1;
      if (next.kind === "symlink" && (!last || followLast)) {
        const target = posix.resolve(at, next.target);
        const resolved = this.walkTo(target, true, syscall, depth + 1);
        cur = resolved.node;
        at = resolved.at;
        continue;
      }
      cur = next;
      at = posix.join(at, list[i]);
    }
    return { node: cur, at };
  }

  private parentOf(path: string, syscall: string): { parent: Inode; name: string } {
    const p = norm(path);
    if (p === "/") throw fsError("EEXIST", syscall, p);
    const parent = this.resolve(posix.dirname(p), true, syscall);
    if (parent.kind !== "dir") throw fsError("ENOTDIR", syscall, p);
    return { parent, name: posix.basename(p) };
  }
}

function norm(path: string): string {
  return posix.resolve("/", path);
}

function parts(path: string): string[] {
  return path.split("/").filter(Boolean);
}

function resize(b: Buffer, length: number): Buffer {
  if (length <= b.length) return Buffer.from(b.subarray(0, length));
  const out = Buffer.alloc(length);
  b.copy(out);
  return out;
}
