/**
 * File access: Read (raw bytes), List (FileInfo per entry), Copy (tar.gz), DiskUsage. In local mode the
 * boot id is simulated, so Read of /proc/sys/kernel/random/boot_id returns the node's current one.
 */
import { createReadStream, promises as fs, type Stats } from "node:fs";
import * as path from "node:path";
import { createGzip } from "node:zlib";
import type { CopyRequest, DiskUsageRequest, ListRequest, ReadRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import { ListRequest_Type } from "../../machinery/api/gen/machine/machine_pb.js";
import { invalidArgument, notFound } from "../../machinery/errors.js";
import { tarHeader, tarPadding, tarTrailer } from "../../machinery/archive/tar.js";
import type { Handlers } from "../transport/service.js";
import type { ApiDeps } from "../deps.js";
import { withMetadata } from "../reply.js";

const BOOT_ID = "/proc/sys/kernel/random/boot_id";
const CHUNK = 64 * 1024;

/** Go fs.FileMode bits talosctl decodes. */
function goMode(st: Stats): number {
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

function fsError(err: unknown, p: string): Error {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return notFound(`open ${p}: no such file or directory`);
  return err as Error;
}

export function fileHandlers(deps: ApiDeps): Handlers {
  return {
    Read: async (req: ReadRequest, send, ctx) => {
      const p = req.path;
      if (deps.node.local && p === BOOT_ID) {
        await send(withMetadata(ctx, { bytes: new TextEncoder().encode(`${deps.node.bootId}\n`) }));
        return;
      }
      let st: Stats;
      try {
        st = await fs.stat(p);
      } catch (err) {
        throw fsError(err, p);
      }
      if (!st.isFile()) throw invalidArgument("path must be a regular file");
      const stream = createReadStream(p, { highWaterMark: CHUNK });
      ctx.signal.addEventListener("abort", () => stream.destroy(), { once: true });
      for await (const chunk of stream) await send(withMetadata(ctx, { bytes: chunk as Buffer }));
    },

    List: async (req: ListRequest, send, ctx) => {
      const root = req.root || "/";
      const maxDepth = req.recurse ? (req.recursionDepth > 0 ? req.recursionDepth : Infinity) : req.recursionDepth > 0 ? req.recursionDepth : 1;
      const types = new Set(req.types);
      const typeOk = (st: Stats) =>
        types.size === 0 ||
        (types.has(ListRequest_Type.REGULAR) && st.isFile()) ||
        (types.has(ListRequest_Type.DIRECTORY) && st.isDirectory()) ||
        (types.has(ListRequest_Type.SYMLINK) && st.isSymbolicLink());
      let rootStat: Stats;
      try {
        rootStat = await fs.lstat(root);
      } catch (err) {
        throw fsError(err, root);
      }
      const info = async (abs: string, rel: string, st: Stats) => ({
        name: abs,
        relativeName: rel,
        size: BigInt(st.size),
        mode: goMode(st),
        modified: BigInt(Math.floor(st.mtimeMs / 1000)),
        isDir: st.isDirectory(),
        uid: st.uid,
        gid: st.gid,
        link: st.isSymbolicLink() ? await fs.readlink(abs).catch(() => "") : "",
      });
      if (typeOk(rootStat)) await send(withMetadata(ctx, await info(root, ".", rootStat)));
      const walk = async (dir: string, depth: number): Promise<void> => {
        if (depth > maxDepth || ctx.signal.aborted) return;
        let names: string[];
        try {
          names = (await fs.readdir(dir)).sort();
        } catch (err) {
          await send(withMetadata(ctx, { name: dir, relativeName: path.relative(root, dir) || ".", error: (err as Error).message }));
          return;
        }
        for (const n of names) {
          const abs = path.join(dir, n);
          let st: Stats;
          try {
            st = await fs.lstat(abs);
          } catch (err) {
            await send(withMetadata(ctx, { name: abs, relativeName: path.relative(root, abs), error: (err as Error).message }));
            continue;
          }
          if (typeOk(st)) await send(withMetadata(ctx, await info(abs, path.relative(root, abs), st)));
          if (st.isDirectory()) await walk(abs, depth + 1);
        }
      };
      if (rootStat.isDirectory()) await walk(root, 1);
    },

    Copy: async (req: CopyRequest, send, ctx) => {
      const root = req.rootPath;
      if (!path.isAbsolute(root)) throw invalidArgument("path is not absolute " + JSON.stringify(root));
      let st: Stats;
      try {
        st = await fs.lstat(root);
      } catch (err) {
        throw fsError(err, root);
      }
      const gz = createGzip();
      const pump = (async () => {
        const base = path.dirname(root);
        const add = async (abs: string, s: Stats) => {
          const name = path.relative(base, abs);
          if (s.isDirectory()) {
            gz.write(tarHeader({ name, type: "dir", mode: s.mode, mtime: s.mtime }));
            for (const n of (await fs.readdir(abs)).sort()) {
              const child = path.join(abs, n);
              await add(child, await fs.lstat(child));
            }
          } else if (s.isSymbolicLink()) {
            gz.write(tarHeader({ name, type: "symlink", mode: s.mode, mtime: s.mtime, linkName: await fs.readlink(abs) }));
          } else if (s.isFile()) {
            const data = await fs.readFile(abs);
            gz.write(tarHeader({ name, type: "file", mode: s.mode, mtime: s.mtime, size: data.length }));
            gz.write(data);
            gz.write(tarPadding(data.length));
          }
        };
        await add(root, st);
        gz.end(tarTrailer());
      })();
      for await (const chunk of gz) await send(withMetadata(ctx, { bytes: chunk as Buffer }));
      await pump;
    },

    DiskUsage: async (req: DiskUsageRequest, send, ctx) => {
      const paths = req.paths.length ? req.paths : ["/"];
      for (const p of paths) {
        const du = async (abs: string, depth: number): Promise<bigint> => {
          let st: Stats;
          try {
            st = await fs.lstat(abs);
          } catch (err) {
            await send(withMetadata(ctx, { name: abs, relativeName: path.relative(p, abs) || ".", error: (err as Error).message }));
            return 0n;
          }
          let size = BigInt(st.size);
          if (st.isDirectory()) {
            let names: string[] = [];
            try {
              names = await fs.readdir(abs);
            } catch {
              /* unreadable folder counts as its own size */
            }
            for (const n of names) size += await du(path.join(abs, n), depth + 1);
          }
          const report = st.isDirectory() || req.all;
          const withinDepth = req.recursionDepth <= 0 || depth <= req.recursionDepth;
          if (report && withinDepth && size >= BigInt(req.threshold > 0 ? req.threshold : 0)) {
            await send(withMetadata(ctx, { name: abs, relativeName: path.relative(p, abs) || ".", size }));
          }
          return size;
        };
        await du(p, 0);
      }
    },
  };
}
