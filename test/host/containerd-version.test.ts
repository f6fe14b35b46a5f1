/**
 * containerd's Version call in process (the containerd health check): the reply decoded, unknown fields skipped,
 * a damaged reply refused naming what is wrong; against a gRPC server on a unix socket that stands in for
 * containerd's API (the real daemon answers it in test/supervisor/containerd.test.ts, whose health turns healthy
 * through this call): the method path, a missing socket naming it, a deadline, an abort, and a restarted daemon
 * answering again at once through a fresh channel.
 */
import * as grpc from "@grpc/grpc-js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContainerdVersionClient, decodeVersionResponse } from "../../src/host/containerd-version.js";

/** A length-delimited field. */
const field = (n: number, s: string) => {
  const b = Buffer.from(s);
  return Buffer.concat([Buffer.from([(n << 3) | 2, b.length]), b]);
};

describe("decodeVersionResponse", () => {
  it("reads version and revision", () => {
    expect(decodeVersionResponse(Buffer.concat([field(1, "1.7.24"), field(2, "abc123")]))).toEqual({ version: "1.7.24", revision: "abc123" });
  });
  it("skips fields it does not know, of every wire type", () => {
    const varintField = Buffer.from([(3 << 3) | 0, 0x96, 0x01]);
    const fixed64 = Buffer.concat([Buffer.from([(4 << 3) | 1]), Buffer.alloc(8)]);
    const fixed32 = Buffer.concat([Buffer.from([(5 << 3) | 5]), Buffer.alloc(4)]);
    expect(decodeVersionResponse(Buffer.concat([varintField, field(2, "r"), fixed64, field(9, "x"), fixed32, field(1, "v")]))).toEqual({ version: "v", revision: "r" });
  });
  it("an empty reply is empty strings", () => {
    expect(decodeVersionResponse(Buffer.alloc(0))).toEqual({ version: "", revision: "" });
  });
  it("refuses a truncated reply", () => {
    expect(() => decodeVersionResponse(field(1, "1.7.24").subarray(0, 4))).toThrow(/truncated field in containerd's version reply/);
    expect(() => decodeVersionResponse(Buffer.from([0x0a, 0x80]))).toThrow(/truncated varint/);
    expect(() => decodeVersionResponse(Buffer.from([(1 << 3) | 3]))).toThrow(/unexpected wire type 3/);
  });
});

describe("ContainerdVersionClient against a gRPC server on a unix socket", () => {
  const dir = mkdtempSync(join(tmpdir(), "ctrd-version-"));
  const socket = join(dir, "containerd.sock");
  let server: grpc.Server | undefined;
  let delayMs = 0;
  const paths: string[] = [];

  const start = async () => {
    const s = new grpc.Server();
    s.register(
      "/containerd.services.version.v1.Version/Version",
      (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        paths.push(call.getPath());
        setTimeout(() => cb(null, Buffer.concat([field(1, "1.7.24"), field(2, "rev")])), delayMs);
      },
      (b: Buffer) => b,
      (b: Buffer) => b,
      "unary",
    );
    await new Promise<void>((res, rej) => s.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? rej(err) : res())));
    server = s;
  };
  const stop = () => {
    server?.forceShutdown();
    server = undefined;
    rmSync(socket, { force: true });
  };

  beforeAll(start);
  afterAll(() => {
    stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers with the daemon's version over one channel", async () => {
    const c = new ContainerdVersionClient(socket);
    try {
      expect(await c.version()).toEqual({ version: "1.7.24", revision: "rev" });
      expect(await c.version()).toEqual({ version: "1.7.24", revision: "rev" });
      expect(paths.at(-1)).toBe("/containerd.services.version.v1.Version/Version");
    } finally {
      c.close();
    }
  });

  it("a missing socket fails fast, naming it", async () => {
    const c = new ContainerdVersionClient(join(dir, "absent.sock"));
    try {
      const t0 = Date.now();
      await expect(c.version(undefined, 3000)).rejects.toThrow(`containerd at ${join(dir, "absent.sock")}`);
      expect(Date.now() - t0).toBeLessThan(2500);
    } finally {
      c.close();
    }
  });

  it("a daemon slower than the deadline is a failure, and an abort ends the call", async () => {
    const c = new ContainerdVersionClient(socket);
    delayMs = 1500;
    try {
      await expect(c.version(undefined, 200)).rejects.toThrow(/Deadline exceeded/i);
      const ac = new AbortController();
      const p = c.version(ac.signal, 5000);
      setTimeout(() => ac.abort(), 50);
      await expect(p).rejects.toThrow(/cancel/i);
    } finally {
      delayMs = 0;
      c.close();
    }
  });

  it("after the daemon restarts, a fresh channel answers at once", async () => {
    const c = new ContainerdVersionClient(socket);
    try {
      expect((await c.version()).version).toBe("1.7.24");
      stop();
      await expect(c.version(undefined, 1000)).rejects.toThrow(/containerd at/);
      c.close(); // what the health check does after a failure
      await start();
      const t0 = Date.now();
      expect((await c.version(undefined, 3000)).version).toBe("1.7.24");
      expect(Date.now() - t0).toBeLessThan(1000);
    } finally {
      c.close();
    }
  });
});
