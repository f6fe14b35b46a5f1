/** Read-only system information (dashboard, `talosctl memory/processes/mounts/...`), straight from /proc. */
import * as proc from "../../host/proc/index.js";
import { readKmsg } from "../../host/kmsg.js";
import type { DmesgRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import { ApiError, Code } from "../../machinery/errors.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";
import { one, withMetadata } from "../reply.js";

export function systemHandlers(deps: ApiDeps): Handlers {
  return {
    Hostname: async (_req, ctx: CallContext) => one(ctx, { hostname: await proc.readHostname() }),
    Memory: async (_req, ctx: CallContext) => one(ctx, { meminfo: await proc.readMeminfo() }),
    LoadAvg: async (_req, ctx: CallContext) => one(ctx, await proc.readLoadavg()),
    SystemStat: async (_req, ctx: CallContext) => one(ctx, await proc.readStat()),
    CPUInfo: async (_req, ctx: CallContext) => one(ctx, { cpuInfo: await proc.readCpuinfo() }),
    CPUFreqStats: async (_req, ctx: CallContext) => one(ctx, { cpuFreqStats: await proc.readCpufreq() }),
    NetworkDeviceStats: async (_req, ctx: CallContext) => one(ctx, await proc.readNetDev()),
    DiskStats: async (_req, ctx: CallContext) => one(ctx, await proc.readDiskstats()),
    Processes: async (_req, ctx: CallContext) => one(ctx, { processes: await proc.readProcesses() }),
    Mounts: async (_req, ctx: CallContext) => one(ctx, { stats: await proc.readMounts() }),

    Dmesg: async (req: DmesgRequest, send, ctx: CallContext) => {
      let records: AsyncGenerator<string>;
      try {
        records = readKmsg({ follow: req.follow, tail: req.tail, signal: ctx.signal });
        const enc = new TextEncoder();
        for await (const line of records) {
          await send(withMetadata(ctx, { bytes: enc.encode(line) }));
        }
      } catch (err) {
        if (ctx.signal.aborted) return;
        const msg = (err as Error).message;
        if (msg.startsWith("kernel log is not available")) throw new ApiError(Code.FailedPrecondition, msg);
        deps.log.warn({ err }, "dmesg failed");
        throw err;
      }
    },
  };
}
