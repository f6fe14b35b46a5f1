/**
 * File access: Read (raw bytes), List (FileInfo per entry), Copy (tar.gz), DiskUsage, all through the host's
 * Files capability and its one walker (src/host/files/walk.ts), with upstream's semantics: an entry that cannot
 * be read is reported (List, DiskUsage) or noted and left out (Copy) and never ends the call. In local mode the
 * boot id is simulated, so Read of /proc/sys/kernel/random/boot_id returns the node's current one.
 */
import { posix } from "node:path";
import type { CopyRequest, DiskUsageRequest, ListRequest, ReadRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import { ListRequest_Type } from "../../machinery/api/gen/machine/machine_pb.js";
import { ApiError, Code, invalidArgument, notFound } from "../../machinery/errors.js";
import { goErrorText, hostFiles, isNotFound, tarGz, walk, type FileStat, type Files, type WalkType } from "../../host/files/index.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";
import { withMetadata } from "../reply.js";

const BOOT_ID = "/proc/sys/kernel/random/boot_id";
const CHUNK = 64 * 1024;

/** Go fs.FileMode bits talosctl decodes. */
function goMode(st: FileStat): number {
  let m = st.mode & 0o777;
  if (st.isDirectory()) m |= 1 << 31;
  if (st.isSymbolicLink()) m |= 1 << 27;
  if (st.isFIFO()) m |= 1 << 25;
  if (st.isSocket()) m |= 1 << 24;
  if (st.isCharacterDevice()) m |= (1 << 26) | (1 << 21);
  else if (st.isBlockDevice()) m |= 1 << 26;
  if (st.mode & 0o4000) m |= 1 << 23;
  if (st.mode & 0o2000) m |= 1 << 22;
  if (st.mode & 0o1000) m |= 1 << 20;
  return m >>> 0;
}

/** The root's own error: NotFound when it does not exist, otherwise the Go-worded error. */
function rootError(err: unknown, p: string): Error {
  const text = goErrorText(err, p);
  return isNotFound(err) ? notFound(text) : new ApiError(Code.Unknown, text);
}

/** Upstream's path normalisation for List and DiskUsage: absolute, no trailing slash, "" is "/". */
function absolute(p: string): string {
  let out = p.startsWith("/") ? p : `/${p}`;
  if (out.endsWith("/")) out = out.slice(0, -1);
  return out === "" ? "/" : out;
}

/** Go's filepath.Clean for the cases that matter here: "." and ".." resolved, no trailing slash. */
function cleanPath(p: string): string {
  if (p === "") return ".";
  const out = posix.normalize(p);
  return out.length > 1 && out.endsWith("/") ? out.slice(0, -1) : out;
}

const separators = (p: string) => p.split("/").length - 1;

/** hashicorp/go-multierror's text, which upstream's Copy sends as its last message's error. */
function multiError(errors: string[]): string {
  const noun = errors.length === 1 ? "error occurred" : "errors occurred";
  return `${errors.length} ${noun}:\n\t${errors.map((e) => `* ${e}`).join("\n\t")}\n\n`;
}

const LIST_TYPES: Partial<Record<ListRequest_Type, WalkType>> = {
  [ListRequest_Type.REGULAR]: "file",
  [ListRequest_Type.DIRECTORY]: "dir",
  [ListRequest_Type.SYMLINK]: "symlink",
};

export function fileHandlers(deps: ApiDeps): Handlers {
  const files: Files = deps.files ?? hostFiles;
  return {
    Read: async (req: ReadRequest, send, ctx: CallContext) => {
      const p = req.path;
      if (deps.node.local && p === BOOT_ID) {
        await send(withMetadata(ctx, { bytes: new TextEncoder().encode(`${deps.node.bootId}\n`) }));
        return;
      }
      let st: FileStat;
      try {
        st = await files.stat(p);
      } catch (err) {
        throw rootError(err, p);
      }
      if (!st.isFile()) throw invalidArgument("path must be a regular file");
      try {
        for await (const chunk of files.readStream(p, { chunkSize: CHUNK, signal: ctx.signal })) await send(withMetadata(ctx, { bytes: chunk }));
      } catch (err) {
        if (ctx.signal.aborted) return;
        throw new ApiError(Code.Unknown, goErrorText(err, p));
      }
    },

    List: async (req: ListRequest, send, ctx: CallContext) => {
      const root = absolute(req.root);
      // without recurse only the root's own entries, as upstream (RecursionDepth counts only with Recurse)
      const maxDepth = req.recurse ? (req.recursionDepth === 0 ? -1 : req.recursionDepth) : 0;
      const types = req.types.map((t) => LIST_TYPES[t]).filter((t): t is WalkType => t !== undefined);
      const entries = await walk(files, root, { maxDepth, types, signal: ctx.signal }).catch((err) => {
        throw rootError(err, root);
      });
      for await (const e of entries) {
        if (e.error !== undefined || !e.stat) {
          await send(withMetadata(ctx, { name: e.path, relativeName: e.rel, error: e.error ?? "" }));
          continue;
        }
        const st = e.stat;
        await send(
          withMetadata(ctx, {
            name: e.path,
            relativeName: e.rel,
            size: BigInt(st.size),
            mode: goMode(st),
            modified: BigInt(Math.floor(st.mtimeMs / 1000)),
            isDir: st.isDirectory(),
            uid: st.uid,
            gid: st.gid,
            link: e.link,
          }),
        );
      }
    },

    Copy: async (req: CopyRequest, send, ctx: CallContext) => {
      const root = cleanPath(req.rootPath);
      if (!root.startsWith("/")) throw invalidArgument(`path is not absolute ${root}`);
      const archive = await tarGz(files, root, { signal: ctx.signal }).catch((err) => {
        throw rootError(err, root);
      });
      for await (const chunk of archive.chunks) {
        if (ctx.signal.aborted) return;
        await send(withMetadata(ctx, { bytes: chunk as Buffer }));
      }
      // upstream: a complete archive, then what was left out as the last message's metadata error
      if (archive.errors.length > 0) {
        const md = withMetadata(ctx, {}).metadata;
        await send({ metadata: { ...md, error: multiError(archive.errors) } });
      }
    },

    DiskUsage: async (req: DiskUsageRequest, send, ctx: CallContext) => {
      const paths = req.paths.length ? req.paths : ["/"];
      const limit = req.recursionDepth;
      const threshold = BigInt(req.threshold);
      for (const raw of paths) {
        const p = absolute(raw);
        let entries;
        try {
          entries = await walk(files, p, { maxDepth: -1, signal: ctx.signal });
        } catch (err) {
          await send(withMetadata(ctx, { name: p, relativeName: p, error: goErrorText(err, p) }));
          continue;
        }
        const rootDepth = separators(p);
        type Usage = { name: string; relativeName: string; size: bigint };
        const report = async (u: Usage, isDir: boolean) => {
          const depth = separators(u.name) - rootDepth;
          if (limit > 0 && depth >= limit) return;
          if (!isDir && !req.all) return;
          if (threshold > 0n && u.size < threshold) return;
          if (threshold < 0n && u.size > -threshold) return;
          await send(withMetadata(ctx, u));
        };
        // folders still being summed, innermost last; a folder is reported once the walk leaves it
        const open: Usage[] = [];
        const leaveUntil = async (next: string | undefined) => {
          while (open.length > 0) {
            const top = open[open.length - 1];
            const under = next !== undefined && next.startsWith(top.name === "/" ? "/" : `${top.name}/`);
            if (under) return;
            open.pop();
            if (open.length > 0) open[open.length - 1].size += top.size;
            await report(top, true);
          }
        };
        for await (const e of entries) {
          if (e.error !== undefined || !e.stat) {
            await send(withMetadata(ctx, { name: e.path, relativeName: e.rel, error: e.error ?? "" }));
            continue;
          }
          await leaveUntil(e.path);
          // /proc/kcore claims the size of the address space
          const size = e.path === "/proc/kcore" ? 0n : BigInt(Math.max(e.stat.size, 0));
          const u = { name: e.path, relativeName: e.rel, size };
          if (e.stat.isDirectory()) {
            open.push(u);
            continue;
          }
          if (open.length > 0) open[open.length - 1].size += size;
          await report(u, false);
        }
        await leaveUntil(undefined);
      }
    },
  };
}
