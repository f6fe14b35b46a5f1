/**
 * `talosctl logs`: service logs from the supervisor (namespace `system`, and `kubelet` whatever the
 * namespace, as upstream); with `-k` (the CRI driver) a pod container's log file as the kubelet writes it under
 * /var/log/pods, found through the CRI by the id talosctl shows (`ns/pod:container[:id]`) and sent as it is (CRI
 * log lines, `<time> <stream> <P|F> <text>`, as upstream sends them); container output from containerd
 * otherwise. Tail first, then with follow everything new until the client goes away. A service log nobody has
 * written is "not registered", as upstream.
 */
import type { LogsRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import { ApiError, Code } from "../../machinery/errors.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";
import { failStream, one, withMetadata } from "../reply.js";
import { hostFiles } from "../../host/files/index.js";
import { followFile } from "../../supervisor/logs.js";
import { containerd, criInspector } from "./containers.js";

/** Well under gRPC's 4 MiB default receive limit; talosctl re-splits on newlines anyway. */
const CHUNK = 64 * 1024;

export function logHandlers(deps: ApiDeps): Handlers {
  return {
    Logs: async (req: LogsRequest, send, ctx: CallContext) => {
      const opts = { tailLines: req.tailLines < 0 ? -1 : req.tailLines, follow: req.follow, signal: ctx.signal };
      let source: AsyncIterable<Buffer>;
      if (req.namespace === "system" || req.id === "kubelet") {
        // Ids become file names under the log folder; never let one point elsewhere.
        if (req.id === "" || /[/\\]|^\.\.?$/.test(req.id)) throw new ApiError(Code.InvalidArgument, `invalid log id ${JSON.stringify(req.id)}`);
        const logs = deps.services?.logs;
        // Only writers register a log (upstream); reading an unknown one is an error, with or without follow.
        if (!logs || !logs.ids().includes(req.id)) {
          return failStream(ctx, new ApiError(Code.Unknown, `log ${JSON.stringify(req.id)} was not registered`), send);
        }
        source = logs.read(req.id, opts);
      } else {
        const insp = criInspector(deps, req.namespace, req.driver);
        if (insp) {
          let path: string;
          try {
            const c = await insp.container(req.id);
            if (!c) throw new ApiError(Code.Unknown, `container ${JSON.stringify(req.id)} not found`);
            if (!c.logPath) throw new ApiError(Code.Unknown, "no log available");
            path = c.logPath;
          } finally {
            insp.close();
          }
          const files = deps.files ?? hostFiles;
          // Opening fails loudly (upstream's os.OpenFile); a follow then waits on the open file, not the name.
          await files.stat(path).catch((e: NodeJS.ErrnoException) => {
            throw new ApiError(Code.Unknown, `open ${path}: ${e.code === "ENOENT" ? "no such file or directory" : e.message}`);
          });
          source = followFile(path, { ...opts, files });
        } else {
          source = await containerd(deps, req.namespace, req.driver).containerLogs(req.namespace, req.id, opts);
        }
      }
      try {
        for await (const buf of source) {
          for (let off = 0; off < buf.length; off += CHUNK) await send(withMetadata(ctx, { bytes: buf.subarray(off, off + CHUNK) }));
        }
      } catch (err) {
        // Client went away (talosctl -f and Ctrl-C): nothing to report.
        if (ctx.signal.aborted) return;
        throw err;
      }
    },

    LogsContainers: (_req, ctx: CallContext) => one(ctx, { ids: deps.services?.logs.ids() ?? [] }),
  };
}
