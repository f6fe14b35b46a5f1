/**
 * The bytes of aggregated replies (upstream's AppendInfo/BuildError and the one-to-many merge), checked by
 * decoding them with the real reply types, as talosctl does.
 */
import { describe, expect, it } from "vitest";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import * as m from "../../../src/machinery/api/gen/machine/machine_pb.js";
import { DataSchema, EmptyResponseSchema } from "../../../src/machinery/api/gen/common/common_pb.js";
import { appendStreamed, appendUnary, goStatusText, metadataField, streamedError, unaryError, WireError } from "../../../src/api/forward/frames.js";
import { one2manyStream, one2manyUnary, statusOf, type LocalServe, type Targets } from "../../../src/api/forward/one2many.js";
import { StatusError } from "../../../src/api/forward/backend.js";
import { BackendPool } from "../../../src/api/forward/pool.js";
import { ApiError, Code } from "../../../src/machinery/errors.js";

const versionReply = (tag: string) => toBinary(m.VersionResponseSchema, create(m.VersionResponseSchema, { messages: [{ version: { tag, arch: "amd64" } }] }));

describe("unary replies", () => {
  it("appending metadata sets metadata.hostname and keeps every other field", () => {
    const out = fromBinary(m.VersionResponseSchema, appendUnary(Buffer.from(versionReply("v1.13.9")), metadataField("10.0.0.2")));
    expect(out.messages).toHaveLength(1);
    expect(out.messages[0].metadata?.hostname).toBe("10.0.0.2");
    expect(out.messages[0].version).toMatchObject({ tag: "v1.13.9", arch: "amd64" });
  });

  it("a reply that already carries metadata gets the target's hostname (ours is merged last)", () => {
    const own = toBinary(m.VersionResponseSchema, create(m.VersionResponseSchema, { messages: [{ metadata: { hostname: "node-b" }, version: { tag: "x" } }] }));
    const out = fromBinary(m.VersionResponseSchema, appendUnary(Buffer.from(own), metadataField("10.0.0.3")));
    expect(out.messages[0].metadata?.hostname).toBe("10.0.0.3");
  });

  it("concatenated replies are one reply with every node's entries, a failed node as an entry with metadata.error", () => {
    const failure = { code: Code.Unavailable, details: "connection refused" };
    const merged = Buffer.concat([
      appendUnary(Buffer.from(versionReply("a")), metadataField("a")),
      unaryError("b", failure),
      appendUnary(Buffer.from(versionReply("c")), metadataField("c")),
    ]);
    const out = fromBinary(m.VersionResponseSchema, merged);
    expect(out.messages.map((x) => [x.metadata?.hostname, x.version?.tag, x.metadata?.error])).toEqual([
      ["a", "a", ""],
      ["b", undefined, "rpc error: code = Unavailable desc = connection refused"],
      ["c", "c", ""],
    ]);
    expect(out.messages[1].metadata?.status).toMatchObject({ code: Code.Unavailable, message: "connection refused" });
    // The error entry is a common.EmptyResponse on its own.
    expect(fromBinary(EmptyResponseSchema, unaryError("b", failure)).messages[0].metadata?.hostname).toBe("b");
  });

  it("a target's encoded google.rpc.Status is kept as it sent it", () => {
    const bin = Buffer.from([0x08, 0x07, 0x12, 0x02, 0x6e, 0x6f]); // code 7, message "no"
    const out = fromBinary(m.VersionResponseSchema, unaryError("b", { code: 7, details: "no", statusBin: bin }));
    expect(out.messages[0].metadata?.status).toMatchObject({ code: 7, message: "no" });
  });

  it("a malformed reply is refused with a WireError naming the problem", () => {
    expect(() => appendUnary(Buffer.from([0x0a, 0x7f, 0x01]), metadataField("x"))).toThrow(WireError);
    expect(() => appendUnary(Buffer.from([0x0a, 0x7f, 0x01]), metadataField("x"))).toThrow(/unexpected message size/);
  });

  it("Go's status text names the code as grpc-go does", () => {
    expect(goStatusText({ code: Code.DeadlineExceeded, details: "context deadline exceeded" })).toBe("rpc error: code = DeadlineExceeded desc = context deadline exceeded");
    expect(goStatusText({ code: Code.Canceled, details: "x" })).toBe("rpc error: code = Canceled desc = x");
  });
});

describe("streamed messages", () => {
  it("each message gets its node's metadata; a failed node is one message with metadata.error", () => {
    const msg = Buffer.from(toBinary(DataSchema, create(DataSchema, { bytes: Buffer.from("log line\n") })));
    const d = fromBinary(DataSchema, appendStreamed(msg, metadataField("10.0.0.2")));
    expect([d.metadata?.hostname, Buffer.from(d.bytes).toString()]).toEqual(["10.0.0.2", "log line\n"]);
    const e = fromBinary(DataSchema, streamedError("10.0.0.3", { code: Code.Unknown, details: 'log "x" was not registered' }));
    expect(e.metadata?.error).toBe('rpc error: code = Unknown desc = log "x" was not registered');
    expect(e.bytes.length).toBe(0);
  });
});

describe("one-to-many merge", () => {
  // Targets served "locally" by the test; any other target comes from a pool that cannot dial (no client
  // certificate), so it fails as a node without forwarding material would.
  const targets = (local: string[]): Targets => ({ pool: new BackendPool(() => undefined), isLocal: (t) => local.includes(t) });
  const call = { path: "/machine.MachineService/Version", metadata: new grpc.Metadata(), requests: [new Uint8Array()] };
  const serve = (tag: string, fail?: Error): LocalServe => ({
    unary: async () => {
      if (fail) throw fail;
      return versionReply(tag);
    },
    stream: async (send) => {
      await send(toBinary(DataSchema, create(DataSchema, { bytes: Buffer.from(`${tag}-1`) })));
      if (fail) throw fail;
      await send(toBinary(DataSchema, create(DataSchema, { bytes: Buffer.from(`${tag}-2`) })));
    },
  });

  it("keeps the order of the targets and fails each target alone", async () => {
    const out = fromBinary(m.VersionResponseSchema, await one2manyUnary(targets(["a", "c"]), ["a", "b", "c"], call, serve("v")));
    expect(out.messages.map((x) => x.metadata?.hostname)).toEqual(["a", "b", "c"]);
    expect(out.messages[1].metadata?.error).toContain("code = Unavailable");
    expect(out.messages[1].metadata?.error).toContain("no client certificate to forward with");
    expect(out.messages[0].version?.tag).toBe("v");
  });

  it("a local handler's error becomes that node's entry, the call still succeeds", async () => {
    const out = fromBinary(m.VersionResponseSchema, await one2manyUnary(targets(["a"]), ["a"], call, serve("v", new ApiError(Code.PermissionDenied, "not authorized"))));
    expect(out.messages[0].metadata).toMatchObject({ hostname: "a", error: "rpc error: code = PermissionDenied desc = not authorized" });
  });

  it("streams: every node's frames pass with their metadata, a node's failure is one error frame after what it sent", async () => {
    const frames: Buffer[] = [];
    await one2manyStream(targets(["a", "b"]), ["a", "b", "z"], { ...call, path: "/machine.MachineService/Logs" }, serve("x", new ApiError(Code.Internal, "boom")), async (f) => {
      frames.push(f);
    });
    const decoded = frames.map((f) => fromBinary(DataSchema, f)).map((d) => [d.metadata?.hostname, Buffer.from(d.bytes).toString(), d.metadata?.error ?? ""]);
    expect(decoded.filter((d) => d[0] === "a")).toEqual([
      ["a", "x-1", ""],
      ["a", "", "rpc error: code = Internal desc = boom"],
    ]);
    expect(decoded.filter((d) => d[0] === "z")).toHaveLength(1);
    expect(decoded.find((d) => d[0] === "z")?.[2]).toContain("code = Unavailable");
  });

  it("maps thrown values to statuses (target status, our errors, anything else Internal)", () => {
    expect(statusOf(new StatusError(grpc.status.NOT_FOUND, "gone"))).toMatchObject({ code: 5, details: "gone" });
    expect(statusOf(new ApiError(Code.Aborted, "a"))).toEqual({ code: 10, details: "a" });
    expect(statusOf(new Error("x"))).toEqual({ code: 13, details: "x" });
    expect(statusOf("plain")).toEqual({ code: 13, details: "plain" });
  });
});
