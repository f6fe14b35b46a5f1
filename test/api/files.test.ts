/**
 * The file RPCs through the real API (mTLS, gRPC) on the real host filesystem, pseudo-filesystems included:
 * issue 13 (`talosctl cgroups` and a Copy of /proc/self/task took machined down) and issue 14 (`ls /etc/hosts`
 * listed ".").
 */
import { lstatSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { status } from "@grpc/grpc-js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MachineService } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { DataSchema } from "../../src/machinery/api/gen/common/common_pb.js";
import type { TestClient } from "../helpers/client.js";
import { readTar } from "../host/files/tar.js";
import { applyControlPlane, eventually, mtlsClient, startNode, talosconfigCreds, version, type Harness } from "./harness.js";

let h: Harness;
let admin: TestClient;
const tree = mkdtempSync(join(tmpdir(), "machined-files-api-"));

beforeAll(async () => {
  // tree/a/b/c.txt (3 bytes), tree/a/big.bin (10000 bytes), tree/top.txt (1 byte)
  mkdirSync(join(tree, "a", "b"), { recursive: true });
  writeFileSync(join(tree, "a", "b", "c.txt"), "abc");
  writeFileSync(join(tree, "a", "big.bin"), Buffer.alloc(10000));
  writeFileSync(join(tree, "top.txt"), "t");
  h = await startNode();
  const cfgs = await applyControlPlane(h);
  admin = mtlsClient(h, talosconfigCreds(cfgs.talosconfig));
  await eventually(() => version(admin));
});
afterAll(async () => {
  admin?.close();
  await h?.stop();
  rmSync(tree, { recursive: true, force: true });
});

const list = (req: MessageInitShape<typeof m.ListRequestSchema>) => admin.stream(MachineService, "List", m.ListRequestSchema, m.FileInfoSchema, req);
const copy = async (rootPath: string) => {
  const msgs = await admin.stream(MachineService, "Copy", m.CopyRequestSchema, DataSchema, { rootPath }, { deadlineMs: 60_000 });
  return { tar: Buffer.concat(msgs.map((d) => d.bytes)), error: msgs.map((d) => d.metadata?.error ?? "").find(Boolean) ?? "" };
};

describe("List", () => {
  it("lists a file root by its own name (ls /etc/hosts), as upstream", async () => {
    const got = await list({ root: "/etc/hosts" });
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ name: "/etc/hosts", relativeName: "hosts", isDir: false, error: "" });
  });

  it("lists a folder as '.' and its entries; recursion depth counts as upstream", async () => {
    const flat = (await list({ root: tree })).map((f) => f.relativeName);
    expect(flat).toEqual([".", "a", "top.txt"]);
    const deep = (await list({ root: tree, recurse: true, recursionDepth: 2 })).map((f) => f.relativeName);
    expect(deep).toEqual([".", "a", "a/b", "a/big.bin", "top.txt"]);
    const all = (await list({ root: tree, recurse: true })).map((f) => f.relativeName);
    expect(all).toEqual([".", "a", "a/b", "a/b/c.txt", "a/big.bin", "top.txt"]);
    const files = (await list({ root: tree, recurse: true, types: [m.ListRequest_Type.REGULAR] })).map((f) => f.relativeName);
    expect(files).toEqual(["a/b/c.txt", "a/big.bin", "top.txt"]);
  });

  it("answers NotFound for a missing root, worded as upstream", async () => {
    await expect(list({ root: "/nonexistent/x" })).rejects.toMatchObject({ code: status.NOT_FOUND, details: "lstat /nonexistent/x: no such file or directory" });
  });

  it("lists /proc/self/task to the end although threads and files come and go", async () => {
    const got = await list({ root: "/proc/self/task", recurse: true, recursionDepth: 2 });
    expect(got[0].relativeName).toBe(".");
    expect(got.some((f) => /^\d+\/status$/.test(f.relativeName))).toBe(true);
  });
});

describe("Copy", () => {
  it("archives a folder's contents relative to it, as upstream (talosctl cp extracts them into the target)", async () => {
    const { tar, error } = await copy(tree);
    expect(error).toBe("");
    const items = readTar(tar);
    expect(items.map((i) => i.name)).toEqual(["a/", "a/b/", "a/b/c.txt", "a/big.bin", "top.txt"]);
    expect(items.find((i) => i.name === "a/b/c.txt")?.data.toString()).toBe("abc");
    expect(items.find((i) => i.name === "a/big.bin")?.size).toBe(10000);
  });

  it("archives a single file under its base name", async () => {
    const items = readTar((await copy("/etc/hostname").catch(() => copy("/etc/hosts"))).tar);
    expect(items).toHaveLength(1);
    expect(["hostname", "hosts"]).toContain(items[0].name);
  });

  it("copies /sys/fs/cgroup (talosctl cgroups): a complete archive with the files' contents, and the node keeps serving", async () => {
    const { tar } = await copy("/sys/fs/cgroup");
    const items = readTar(tar);
    const files = items.filter((i) => i.type === "0");
    expect(files.length).toBeGreaterThan(10);
    // cgroup files report size 0; their content was read anyway
    expect(files.some((i) => i.size > 0)).toBe(true);
    expect((await version(admin)).messages[0].version?.tag).toBeTruthy();
  });

  it("copies /proc/self/task: an archive plus upstream's note of what was left out, and the node keeps serving", async () => {
    const { tar, error } = await copy("/proc/self/task");
    const items = readTar(tar);
    expect(items.some((i) => /^\d+\/status$/.test(i.name) && i.data.toString().includes("Pid:"))).toBe(true);
    // mem answers EIO to any read: left out, and said so as the last message's error
    expect(error).toMatch(/^\d+ errors? occurred:\n\t\* skipping "/);
    expect(error).toMatch(/\* skipping "\/proc\/self\/task\/\d+\/mem": read \/proc\/self\/task\/\d+\/mem: input\/output error/);
    expect((await version(admin)).messages[0].version?.tag).toBeTruthy();
  });

  it("refuses a relative path and answers NotFound for a missing one", async () => {
    await expect(copy("etc")).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: "path is not absolute etc" });
    await expect(copy("/nonexistent")).rejects.toMatchObject({ code: status.NOT_FOUND });
  });
});

describe("DiskUsage", () => {
  const du = (req: MessageInitShape<typeof m.DiskUsageRequestSchema>) => admin.stream(MachineService, "DiskUsage", m.DiskUsageRequestSchema, m.DiskUsageInfoSchema, req);

  it("reports folders after their contents, with sizes summed, down to upstream's depth (talosctl sends depth + 1)", async () => {
    const all = await du({ paths: [tree] });
    expect(all.map((d) => d.relativeName)).toEqual(["a/b", "a", "."]);
    const own = (p: string) => BigInt(lstatSync(join(tree, p)).size);
    expect(all.map((d) => d.size)).toEqual([own("a/b") + 3n, own("a") + own("a/b") + 3n + 10000n, own(".") + own("a") + own("a/b") + 3n + 10000n + 1n]);
    // `talosctl usage -d 1`: the root and its children
    expect((await du({ paths: [tree], recursionDepth: 2 })).map((d) => d.relativeName)).toEqual(["a", "."]);
    const withFiles = await du({ paths: [tree], all: true, recursionDepth: 2 });
    expect(withFiles.map((d) => d.relativeName)).toEqual(["a", "top.txt", "."]);
    expect((await du({ paths: [tree], threshold: 5000n })).map((d) => d.relativeName)).toEqual(["a", "."]);
  });

  it("reports a missing path as an error entry and goes on", async () => {
    const got = await du({ paths: ["/nonexistent", tree], recursionDepth: 1 });
    expect(got[0]).toMatchObject({ name: "/nonexistent", relativeName: "/nonexistent", error: "lstat /nonexistent: no such file or directory" });
    expect(got[1].relativeName).toBe(".");
  });
});
