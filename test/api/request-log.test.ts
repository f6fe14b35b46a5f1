/** The per-call log line upstream's gRPC middleware writes (apid and machined logs). */
import { describe, expect, it } from "vitest";
import { Metadata } from "@grpc/grpc-js";
import { MachineService } from "../../src/machinery/api/gen/machine/machine_pb.js";
import { ApiError, Code } from "../../src/machinery/errors.js";
import { formatRequest, goDuration, logRequests, metadataText, type RequestRecord } from "../../src/api/request-log.js";
import type { CallContext } from "../../src/api/transport/context.js";

describe("request log", () => {
  it("prints durations like Go's time.Duration", () => {
    expect(goDuration(0)).toBe("0s");
    expect(goDuration(0.0005)).toBe("500ns");
    expect(goDuration(0.0641)).toBe("64.1µs");
    expect(goDuration(1.234567)).toBe("1.234567ms");
    expect(goDuration(2500)).toBe("2.5s");
    expect(goDuration(62_500)).toBe("1m2.5s");
    expect(goDuration(3_723_000)).toBe("1h2m3s");
  });

  it("prints metadata sorted, with the token hidden", () => {
    const md = new Metadata();
    md.set("nodes", "10.0.0.1");
    md.add("nodes", "10.0.0.2");
    md.set("token", "secret");
    md.set("authority", "x");
    expect(metadataText(md)).toBe("authority=x;nodes=10.0.0.1,10.0.0.2;token=<hidden>");
  });

  it("wraps handlers without changing results or errors, one record per call", async () => {
    const seen: RequestRecord[] = [];
    const ctx = { metadata: new Metadata() } as CallContext;
    const svc = logRequests(
      new Map([
        [
          MachineService,
          {
            Version: async () => ({ messages: [] }),
            Logs: async (_req: unknown, _send: unknown, _ctx: CallContext) => {
              throw new ApiError(Code.NotFound, "nope");
            },
          },
        ],
      ]),
      (r) => seen.push(r),
    ).get(MachineService)!;
    expect(await svc.Version({}, ctx)).toEqual({ messages: [] });
    await expect(svc.Logs({}, async () => {}, ctx)).rejects.toThrow("nope");
    expect(seen.map((r) => [r.method, r.kind, r.code])).toEqual([
      ["/machine.MachineService/Version", "unary", Code.OK],
      ["/machine.MachineService/Logs", "stream", Code.NotFound],
    ]);
    expect(formatRequest({ ...seen[1], durationMs: 1.5 })).toBe("NotFound [/machine.MachineService/Logs] 1.5ms stream rpc error: code = NotFound desc = nope ()");
  });
});
