/** The one directory walker (List, DiskUsage, Copy), on the in-memory filesystem with injected faults. */
import { describe, expect, it } from "vitest";
import { MemoryFiles, walk, type WalkEntry, type WalkOptions } from "../../../src/host/files/index.js";

async function collect(files: MemoryFiles, root: string, opts: WalkOptions = {}): Promise<WalkEntry[]> {
  const out: WalkEntry[] = [];
  for await (const e of await walk(files, root, opts)) out.push(e);
  return out;
}

const tree = () =>
  new MemoryFiles()
    .addFile("/etc/hosts", "127.0.0.1 localhost\n")
    .addFile("/etc/ssl/certs/ca.pem", "x")
    .addFile("/etc/b", "b")
    .addDir("/etc/empty")
    .addSymlink("/etc/resolv.conf", "/system/resolved/resolv.conf")
    .addFile("/system/resolved/resolv.conf", "nameserver 1.1.1.1\n");

describe("walk", () => {
  it("reports the root folder as '.', then its entries depth first with sorted names", async () => {
    const got = await collect(tree(), "/etc");
    expect(got.map((e) => e.rel)).toEqual(["." , "b", "empty", "hosts", "resolv.conf", "ssl", "ssl/certs", "ssl/certs/ca.pem"]);
    expect(got.map((e) => e.path)[1]).toBe("/etc/b");
    expect(got.find((e) => e.rel === "resolv.conf")?.link).toBe("/system/resolved/resolv.conf");
    expect(got.every((e) => e.error === undefined)).toBe(true);
  });

  it("reports a root that is a file under its own name, not '.' (ls /etc/hosts)", async () => {
    const got = await collect(tree(), "/etc/hosts");
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ path: "/etc/hosts", rel: "hosts" });
    expect(got[0].stat?.isFile()).toBe(true);
  });

  it("walks the target of a symlink root", async () => {
    const got = await collect(tree(), "/etc/resolv.conf");
    expect(got.map((e) => [e.path, e.rel])).toEqual([["/system/resolved/resolv.conf", "resolv.conf"]]);
  });

  it("rejects before walking when the root does not exist", async () => {
    await expect(walk(tree(), "/nope")).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("stops descending at maxDepth, counting separators as upstream (the root is always entered)", async () => {
    expect((await collect(tree(), "/etc", { maxDepth: 0 })).map((e) => e.rel)).toEqual([".", "b", "empty", "hosts", "resolv.conf", "ssl"]);
    expect((await collect(tree(), "/etc", { maxDepth: 1 })).map((e) => e.rel)).toEqual([".", "b", "empty", "hosts", "resolv.conf", "ssl"]);
    expect((await collect(tree(), "/etc", { maxDepth: 2 })).map((e) => e.rel)).toContain("ssl/certs");
    expect((await collect(tree(), "/etc", { maxDepth: 2 })).map((e) => e.rel)).not.toContain("ssl/certs/ca.pem");
  });

  it("filters by type and can leave out the root folder", async () => {
    expect((await collect(tree(), "/etc", { types: ["file"] })).map((e) => e.rel)).toEqual(["b", "hosts", "ssl/certs/ca.pem"]);
    expect((await collect(tree(), "/etc", { types: ["symlink"] })).map((e) => e.rel)).toEqual(["resolv.conf"]);
    expect((await collect(tree(), "/etc/ssl", { skipRoot: true })).map((e) => e.rel)).toEqual(["certs", "certs/ca.pem"]);
  });

  it("turns an unreadable folder, a vanished entry and a failing readlink into error entries and goes on", async () => {
    const files = tree()
      .addFile("/proc/1/status", "s")
      .addFile("/proc/2/status", "s")
      .addSymlink("/proc/1/exe", "/bin/x")
      .addDir("/proc/1/fd")
      .fail("/proc/1/fd", "readdir", "EACCES")
      .fail("/proc/2", "lstat", "ENOENT")
      .fail("/proc/1/exe", "readlink", "ENOENT");
    const got = await collect(files, "/proc");
    expect(got.map((e) => [e.path, e.rel, e.error ?? ""])).toEqual([
      ["/proc", ".", ""],
      ["/proc/1", "1", ""],
      ["/proc/1/exe", "1/exe", "readlink /proc/1/exe: no such file or directory"],
      ["/proc/1/fd", "", "open /proc/1/fd: permission denied"],
      ["/proc/1/status", "1/status", ""],
      ["/proc/2", "", "lstat /proc/2: no such file or directory"],
    ]);
  });

  it("ends quietly when the signal aborts", async () => {
    const ac = new AbortController();
    const seen: string[] = [];
    for await (const e of await walk(tree(), "/etc", { signal: ac.signal })) {
      seen.push(e.rel);
      if (e.rel === "b") ac.abort();
    }
    expect(seen).toEqual([".", "b"]);
  });
});
