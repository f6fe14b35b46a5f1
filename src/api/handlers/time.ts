/**
 * time.TimeService (`talosctl time [--check server]`): one SNTP query (host/sntp.ts) to the node's first time
 * server (TimeServerStatus, i.e. `machine.time.servers` or upstream's default) or to the server asked for, and the
 * node's clock next to the server's, with upstream's validation and error texts.
 */
import type { TimeRequest } from "../../machinery/api/gen/time/time_pb.js";
import { ApiError, Code, invalidArgument } from "../../machinery/errors.js";
import { TimeServerStatusType } from "../../machinery/resources/types/network.js";
import { readSpec } from "../../machinery/resources/read.js";
import { sntpQuery, validateSntp } from "../../host/sntp.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";
import { one } from "../reply.js";

export const DEFAULT_NTP_SERVER = "time.cloudflare.com";

const ts = (ms: number) => ({ seconds: BigInt(Math.floor(ms / 1000)), nanos: Math.round((ms % 1000) * 1e6) });

export interface TimeHandlerOptions {
  /** The SNTP query; default host/sntp.ts against port 123. */
  query?: typeof sntpQuery;
}

export function timeHandlers(deps: ApiDeps, opts: TimeHandlerOptions = {}): Handlers {
  const query = opts.query ?? sntpQuery;
  const check = async (server: string, ctx: CallContext) => {
    if (!server) throw invalidArgument("ntp server is required");
    if (server.startsWith("/dev/")) throw new ApiError(Code.Unimplemented, `error querying PTP device ${JSON.stringify(server)}: PTP devices are not supported on this node`);
    let remote: Date;
    try {
      const r = await query(server);
      try {
        validateSntp(r);
      } catch (err) {
        throw new ApiError(Code.Unknown, `error validating NTP response: ${(err as Error).message}`);
      }
      remote = r.time;
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw new ApiError(Code.Unknown, `error querying NTP server ${JSON.stringify(server)}: ${(err as Error).message}`);
    }
    return one(ctx, { server, localtime: ts(Date.now()), remotetime: ts(remote.getTime()) });
  };
  return {
    Time: async (_req: unknown, ctx: CallContext) => {
      const status = readSpec(deps.state, TimeServerStatusType, "timeservers");
      return check(status?.timeServers[0] ?? DEFAULT_NTP_SERVER, ctx);
    },
    TimeCheck: async (req: TimeRequest, ctx: CallContext) => check(req.server, ctx),
  };
}
