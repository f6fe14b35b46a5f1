/**
 * The one directory walker (List, DiskUsage and Copy use it), with the semantics of upstream's archiver.Walker
 * over Go's filepath.Walk:
 *   - the root is lstat'ed first (that error is the caller's to report); a symlink root is resolved and its
 *     target walked;
 *   - entries come depth first, each folder's names sorted; a folder is reported before its contents;
 *   - a root that is not a folder is reported under its own base name (`ls /etc/hosts` shows "hosts");
 *   - `maxDepth` -1 walks everything; otherwise a folder whose depth below the root (counted in path
 *     separators, as upstream counts them) reaches maxDepth is reported but not entered; the root always is;
 *   - an entry that cannot be read (a folder that cannot be listed, an lstat that fails because the entry
 *     vanished, a readlink that fails) becomes an entry with `error` set and an empty `rel`, and the walk
 *     goes on. Nothing inside the iteration throws for one bad entry: a walk of /proc or /sys cannot fail
 *     half-way because a thread exited or a file refuses to be read.
 */
import * as path from "node:path";
import { goErrorText } from "./errors.js";
import type { Files, FileStat } from "./types.js";

export type WalkType = "file" | "dir" | "symlink";

export interface WalkOptions {
  /** -1: no limit (default). */
  maxDepth?: number;
  /** Leave out the root when it is a folder (Copy's archive holds the folder's contents). */
  skipRoot?: boolean;
  /** Report only these types (errors are always reported). */
  types?: readonly WalkType[];
  signal?: AbortSignal;
}

export interface WalkEntry {
  /** Full path. */
  path: string;
  /** Relative to the root ("." for the root folder, the base name for a root file); "" on errors. */
  rel: string;
  /** Absent when the entry could not be lstat'ed. */
  stat?: FileStat;
  /** Target of a symlink. */
  link: string;
  /** Go-style text ("lstat /x: no such file or directory") when the entry could not be read. */
  error?: string;
}

const separators = (p: string) => p.split(path.sep).length - 1;

function atMaxDepth(max: number, root: string, cur: string): boolean {
  if (max < 0 || root === cur) return false;
  return separators(cur) - separators(root) >= max;
}

function typeMatches(st: FileStat, types: readonly WalkType[]): boolean {
  return types.some((t) => (t === "file" ? st.isFile() : t === "dir" ? st.isDirectory() : st.isSymbolicLink()));
}

/**
 * Checks the root (rejecting when it cannot be lstat'ed or, for a symlink, resolved) and returns the walk.
 * The returned iterable never throws for an entry; it ends early, quietly, when `signal` aborts.
 */
export async function walk(files: Files, root: string, opts: WalkOptions = {}): Promise<AsyncIterable<WalkEntry>> {
  const maxDepth = opts.maxDepth ?? -1;
  let rootPath = root;
  const info = await files.lstat(root);
  if (info.isSymbolicLink()) rootPath = await files.realpath(root);

  type Verdict = "go-on" | "skip-dir";

  async function* emit(p: string, st: FileStat | undefined, walkErr: unknown, out: { verdict: Verdict }): AsyncGenerator<WalkEntry> {
    out.verdict = "go-on";
    const entry: WalkEntry = { path: p, rel: "", stat: st, link: "" };
    if (walkErr !== undefined) entry.error = goErrorText(walkErr, p);
    if (p === rootPath && st && !st.isDirectory()) entry.rel = path.basename(p);
    else if (entry.error === undefined) entry.rel = path.relative(rootPath, p) || ".";
    if (entry.error === undefined && st) {
      if (opts.types?.length && !typeMatches(st, opts.types)) {
        if (st.isDirectory() && atMaxDepth(maxDepth, rootPath, p)) out.verdict = "skip-dir";
        return;
      }
      if (p === rootPath && opts.skipRoot && st.isDirectory()) return;
      if (st.isSymbolicLink()) {
        try {
          entry.link = await files.readlink(p);
        } catch (err) {
          entry.error = goErrorText(err, p);
        }
      }
    }
    yield entry;
    if (entry.error === undefined && st?.isDirectory() && atMaxDepth(maxDepth, rootPath, p)) out.verdict = "skip-dir";
  }

  async function* visit(p: string, st: FileStat): AsyncGenerator<WalkEntry> {
    const out = { verdict: "go-on" as Verdict };
    if (!st.isDirectory()) {
      yield* emit(p, st, undefined, out);
      return;
    }
    let names: string[] = [];
    let readErr: unknown;
    try {
      names = (await files.readdir(p)).sort();
    } catch (err) {
      readErr = err ?? new Error("readdir failed");
    }
    yield* emit(p, st, readErr, out);
    if (readErr !== undefined || out.verdict === "skip-dir") return;
    for (const name of names) {
      if (opts.signal?.aborted) return;
      const child = path.join(p, name);
      let cst: FileStat;
      try {
        cst = await files.lstat(child);
      } catch (err) {
        yield* emit(child, undefined, err ?? new Error("lstat failed"), out);
        continue;
      }
      yield* visit(child, cst);
    }
  }

  return (async function* () {
    let st: FileStat;
    try {
      st = await files.lstat(rootPath);
    } catch (err) {
      yield* emit(rootPath, undefined, err ?? new Error("lstat failed"), { verdict: "go-on" });
      return;
    }
    yield* visit(rootPath, st);
  })();
}
