/** The one atomic-write helper: its protocol (on the fake, which records it) and its effect on a real folder. */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cleanupTemporaries, hostFiles, MemoryFiles, writeFileAtomic } from "../../../src/host/files/index.js";

const dir = mkdtempSync(join(tmpdir(), "machined-atomic-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("writeFileAtomic", () => {
  it("writes a temporary beside the target, fsyncs it, renames it over the target, then fsyncs the folder", async () => {
    const files = new MemoryFiles().addFile("/state/config.yaml", "old");
    await writeFileAtomic(files, "/state/config.yaml", "new");
    const tmp = files.ops[0].replace(/^create /, "");
    expect(tmp).toMatch(/^\/state\/\.config\.yaml\.[0-9a-f]{12}\.tmp$/);
    expect(files.ops).toEqual([`create ${tmp}`, `write ${tmp}`, `sync ${tmp}`, `rename ${tmp} -> /state/config.yaml`, "sync /state"]);
    expect(files.contents("/state/config.yaml")?.toString()).toBe("new");
    expect((await files.stat("/state/config.yaml")).mode & 0o777).toBe(0o600);
  });

  it("takes a stream, and leaves the old file and no temporary when the stream fails", async () => {
    const files = new MemoryFiles().addFile("/var/etcd.snapshot", "old");
    async function* upload() {
      yield Buffer.from("part one ");
      throw new Error("client went away");
    }
    await expect(writeFileAtomic(files, "/var/etcd.snapshot", upload())).rejects.toThrow("client went away");
    expect(files.contents("/var/etcd.snapshot")?.toString()).toBe("old");
    expect(await files.readdir("/var")).toEqual(["etcd.snapshot"]);
    async function* ok() {
      yield Buffer.from("a");
      yield Buffer.from("b");
    }
    await writeFileAtomic(files, "/var/etcd.snapshot", ok());
    expect(files.contents("/var/etcd.snapshot")?.toString()).toBe("ab");
  });

  it("creates the folder, and a failed rename removes the temporary", async () => {
    const files = new MemoryFiles().addDir("/etc/hosts");
    files.addFile("/etc/hosts/x", "a folder in the way");
    await expect(writeFileAtomic(files, "/etc/hosts", "127.0.0.1 localhost\n")).rejects.toMatchObject({ code: "EISDIR" });
    expect(await files.readdir("/etc")).toEqual(["hosts"]);
    await writeFileAtomic(files, "/new/dir/file", "x", 0o644);
    expect(files.contents("/new/dir/file")?.toString()).toBe("x");
  });

  it("replaces a real file and leaves nothing else behind; cleanupTemporaries removes leftovers of a cut write", async () => {
    const target = join(dir, "node-identity.yaml");
    writeFileSync(target, "old");
    writeFileSync(join(dir, ".node-identity.yaml.abcdef012345.tmp"), "half");
    await writeFileAtomic(hostFiles, target, "nodeId: x\n");
    expect(readFileSync(target, "utf8")).toBe("nodeId: x\n");
    await cleanupTemporaries(hostFiles, target);
    expect(readdirSync(dir)).toEqual(["node-identity.yaml"]);
  });
});
