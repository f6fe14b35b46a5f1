/**
 * One rule for every call, stream and controller: whatever a handler, a stream's source or a controller
 * throws (an Error or anything else, at once or later) ends that call with a gRPC status, or that
 * controller's run (retried with backoff), never the process. Real TLS and gRPC; the handlers are made to
 * fail on purpose.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { status } from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { Readable } from "node:stream";
import pino from "pino";
import { MachineService } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { DataSchema } from "../../src/machinery/api/gen/common/common_pb.js";
import { ApiServer } from "../../src/api/server.js";
import type { ApiDeps } from "../../src/api/deps.js";
import type { CallContext } from "../../src/api/transport/context.js";
import { issueClientCert, issueServerCert } from "../../src/machinery/pki/issue.js";
import { newTalosCA } from "../../src/machinery/pki/ca.js";
import { tlsKeyPem } from "../../src/machinery/pki/pem.js";
import { ControllerRuntime } from "../../src/state/runtime/index.js";
import { TestClient, mtls } from "../helpers/client.js";
import { eventually, startNode, version, insecureClient, type Harness } from "./harness.js";

let api: ApiServer;
let c: TestClient;
const signals: { made: boolean; aborted?: boolean }[] = [];

beforeAll(async () => {
  const deps = { log: pino({ level: "silent" }), localNames: () => ["127.0.0.1"] } as unknown as ApiDeps;
  api = new ApiServer(deps);
  api.register(
    new Map([
      [
        MachineService,
        {
          // Unary: a synchronous throw of a non-Error, a rejected promise, a reply that cannot be encoded.
          Version: () => {
            throw "not an Error";
          },
          Hostname: async () => {
            await new Promise((r) => setImmediate(r));
            throw Object.assign(new Error("hostname store is gone"), { code: "ENOENT" });
          },
          Kubeconfig: async (_req: unknown, send: (d: object) => Promise<void>) => {
            await send({ bytes: new Uint8Array([1]) });
            // A stream source that fails after its first item.
            const source = Readable.from(
              (async function* () {
                yield new Uint8Array([2]);
                throw new Error("source broke");
              })(),
            );
            for await (const chunk of source) await send({ bytes: chunk as Uint8Array });
          },
          Dmesg: async (_req: unknown, _send: unknown, ctx: CallContext) => {
            // A handler that reads its signal and throws undefined.
            signals.push({ made: ctx.signal instanceof AbortSignal });
            throw undefined;
          },
          Logs: async (_req: unknown, send: (d: object) => Promise<void>) => {
            // The reply is the wrong shape: encoding it fails inside grpc-js.
            await send({ bytes: "not bytes" as unknown as Uint8Array });
          },
          EtcdRecover: async (reqs: AsyncIterable<unknown>) => {
            for await (const _ of reqs) throw new RangeError("bad chunk");
            return {};
          },
          Containers: () => ({ messages: [] }),
        },
      ],
    ]),
  );
  // Mutual TLS with an admin certificate: every method is allowed, so each one reaches its handler.
  const ca = await newTalosCA();
  const id = await issueServerCert(ca, { ipSANs: ["127.0.0.1"] });
  const admin = await issueClientCert(ca, { roles: ["os:admin"] });
  const addr = await api.listen("127.0.0.1", 0, { kind: "mtls", identity: { certPem: id.crt, keyPem: tlsKeyPem(id.key) }, clientCAs: [ca.crt] });
  c = new TestClient(`127.0.0.1:${addr.port}`, mtls(ca.crt, admin.crt, tlsKeyPem(admin.key)));
});
afterAll(async () => {
  c?.close();
  await api?.close();
});

const stillServing = async () => {
  const r = await c.unary(MachineService, "Containers", m.ContainersRequestSchema, m.ContainersResponseSchema, {});
  expect(r.messages).toEqual([]);
};

describe("a failing call ends with a status, and the node goes on serving", () => {
  it("a synchronous throw of a non-Error", async () => {
    await expect(c.unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {})).rejects.toMatchObject({ code: status.INTERNAL, details: "not an Error" });
    await stillServing();
  });

  it("a rejected promise carrying a system error code", async () => {
    await expect(c.unary(MachineService, "Hostname", EmptySchema, m.HostnameResponseSchema, {})).rejects.toMatchObject({
      code: status.INTERNAL,
      details: "hostname store is gone",
    });
    await stillServing();
  });

  it("a stream whose source throws after its first message", async () => {
    const got: number[] = [];
    await expect(
      c.stream(MachineService, "Kubeconfig", EmptySchema, DataSchema, {}, { onMessage: (d) => got.push(...d.bytes) }),
    ).rejects.toMatchObject({ code: status.INTERNAL, details: "source broke" });
    expect(got).toEqual([1, 2]);
    await stillServing();
  });

  it("a stream handler that throws undefined", async () => {
    await expect(c.stream(MachineService, "Dmesg", m.DmesgRequestSchema, DataSchema, {})).rejects.toMatchObject({ code: status.INTERNAL });
    expect(signals).toEqual([{ made: true }]);
    await stillServing();
  });

  it("a reply that cannot be encoded", async () => {
    await expect(c.stream(MachineService, "Logs", m.LogsRequestSchema, DataSchema, {})).rejects.toMatchObject({ code: status.INTERNAL });
    await stillServing();
  });

  it("a client stream whose handler throws on the first message", async () => {
    const err = await new Promise<grpc.ServiceError | null>((resolve) => {
      const call = c.raw.makeClientStreamRequest(
        "/machine.MachineService/EtcdRecover",
        (d: object) => Buffer.from(toBinary(DataSchema, create(DataSchema, d))),
        (b: Buffer) => fromBinary(m.EtcdRecoverResponseSchema, b),
        new grpc.Metadata(),
        {},
        (e) => resolve(e),
      );
      call.write({ bytes: new Uint8Array([1, 2, 3]) });
      call.end();
    });
    expect(err).toMatchObject({ code: status.INTERNAL, details: "bad chunk" });
    await stillServing();
  });

  it("holds nothing afterwards", async () => {
    await eventually(async () => expect(api.budget).toEqual({ calls: 0, inflightBytes: 0 }));
  });
});

describe("a throwing controller", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startNode();
  });
  afterAll(async () => {
    await h?.stop();
  });

  it("fails its own runs, retried with backoff, while the node keeps serving", async () => {
    const runtime = new ControllerRuntime(h.node.node.state, { backoff: { initialMs: 10, maxMs: 50 } });
    let runs = 0;
    const bad = (name: string, fail: () => unknown) => ({
      name,
      inputs: [],
      outputs: [],
      reconcile: () => {
        runs++;
        return fail() as void;
      },
    });
    runtime.register(
      bad("test.SyncThrowController", () => {
        throw new Error("sync");
      }),
    );
    runtime.register(bad("test.RejectController", () => Promise.reject("not an Error")));
    runtime.register(
      bad("test.NullThrowController", () => {
        throw null;
      }),
    );
    runtime.start();
    try {
      await eventually(async () => {
        for (const s of runtime.statuses()) expect(s.consecutiveFailures).toBeGreaterThanOrEqual(3);
      });
      expect(runtime.status("test.SyncThrowController")?.lastError).toBe("sync");
      expect(runtime.status("test.RejectController")?.lastError).toBe("not an Error");
      const cl = insecureClient(h);
      expect((await version(cl)).messages[0].version?.tag).toBeTruthy();
      cl.close();
      expect(runs).toBeGreaterThanOrEqual(9);
    } finally {
      await runtime.stop();
    }
  });
});
