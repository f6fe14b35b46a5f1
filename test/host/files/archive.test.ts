/** Copy's tar.gz (upstream archiver.TarGz semantics) over the in-memory filesystem, pseudo-file faults included. */
import { describe, expect, it } from "vitest";
import { MemoryFiles, tarGz } from "../../../src/host/files/index.js";
import { readTar } from "./tar.js";

async function archive(files: MemoryFiles, root: string) {
  const a = await tarGz(files, root);
  const chunks: Buffer[] = [];
  for await (const c of a.chunks) chunks.push(c);
  return { items: readTar(Buffer.concat(chunks)), errors: a.errors };
}

describe("tarGz", () => {
  it("archives a folder's contents relative to it, without the folder itself", async () => {
    const files = new MemoryFiles()
      .addFile("/var/log/a.log", "alpha\n", { mode: 0o640, uid: 7 })
      .addDir("/var/log/sub")
      .addFile("/var/log/sub/b.log", "beta\n")
      .addSymlink("/var/log/latest", "a.log");
    const { items, errors } = await archive(files, "/var/log");
    expect(errors).toEqual([]);
    expect(items.map((i) => [i.name, i.type])).toEqual([
      ["a.log", "0"],
      ["latest", "2"],
      ["sub/", "5"],
      ["sub/b.log", "0"],
    ]);
    expect(items[0]).toMatchObject({ mode: 0o640, uid: 7, data: Buffer.from("alpha\n") });
    expect(items[1].link).toBe("a.log");
  });

  it("archives a single file under its base name", async () => {
    const { items } = await archive(new MemoryFiles().addFile("/etc/os-release", "NAME=x\n"), "/etc/os-release");
    expect(items.map((i) => [i.name, i.data.toString()])).toEqual([["os-release", "NAME=x\n"]]);
  });

  it("learns the content of size-0 pseudo-files, gives EINVAL reads an empty entry, and notes other read errors", async () => {
    const files = new MemoryFiles()
      .addFile("/sys/fs/cgroup/cpu.stat", "usage_usec 5\n", { pseudo: true })
      .addFile("/sys/fs/cgroup/blkio.reset_stats", "", { pseudo: true })
      .addFile("/sys/fs/cgroup/memory.current", "42\n", { pseudo: true })
      .fail("/sys/fs/cgroup/blkio.reset_stats", "read", "EINVAL")
      .fail("/sys/fs/cgroup/memory.current", "read", "EIO");
    const { items, errors } = await archive(files, "/sys/fs/cgroup");
    expect(items.map((i) => [i.name, i.data.toString()])).toEqual([
      ["blkio.reset_stats", ""],
      ["cpu.stat", "usage_usec 5\n"],
    ]);
    expect(errors).toEqual(['skipping "/sys/fs/cgroup/memory.current": read /sys/fs/cgroup/memory.current: input/output error']);
  });

  it("notes entries that vanish or cannot be listed and still ends the archive properly", async () => {
    const files = new MemoryFiles()
      .addFile("/proc/self/task/1/status", "State: R\n", { pseudo: true })
      .addFile("/proc/self/task/2/status", "State: S\n", { pseudo: true })
      .addDir("/proc/self/task/1/fd")
      .fail("/proc/self/task/2", "lstat", "ENOENT")
      .fail("/proc/self/task/1/fd", "readdir", "EACCES")
      .addSpecial("/proc/self/task/1/sock", "socket");
    const { items, errors } = await archive(files, "/proc/self/task");
    expect(items.map((i) => i.name)).toEqual(["1/", "1/status"]);
    expect(errors).toEqual([
      'skipping "/proc/self/task/1/fd": open /proc/self/task/1/fd: permission denied',
      'skipping "/proc/self/task/1/sock": archive/tar: sockets not supported',
      'skipping "/proc/self/task/2": lstat /proc/self/task/2: no such file or directory',
    ]);
  });

  it("copies a large file in full, streamed", async () => {
    const big = Buffer.alloc(3 << 20, 7);
    big.write("end", big.length - 3);
    const { items } = await archive(new MemoryFiles().addFile("/data/big.bin", big), "/data");
    expect(items[0].size).toBe(big.length);
    expect(items[0].data.equals(big)).toBe(true);
  });

  it("copies a size-0 file whose probe fills 4 KiB as empty, as upstream does", async () => {
    const files = new MemoryFiles().addFile("/proc/x/smaps", Buffer.alloc(8192, 0x61), { pseudo: true });
    const { items } = await archive(files, "/proc/x/smaps");
    expect(items.map((i) => [i.name, i.size])).toEqual([["smaps", 0]]);
  });

  it("rejects up front when the root does not exist", async () => {
    await expect(tarGz(new MemoryFiles(), "/missing")).rejects.toMatchObject({ code: "ENOENT" });
  });
});
