/**
 * The in-memory filesystem behaves like the real one for everything callers use: the same assertions run
 * against hostFiles (in a temporary folder) and MemoryFiles.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { hostFiles, MemoryFiles, type Files } from "../../../src/host/files/index.js";

const realRoot = mkdtempSync(join(tmpdir(), "machined-files-"));
afterAll(() => rmSync(realRoot, { recursive: true, force: true }));

let n = 0;
const cases: [string, () => Promise<{ files: Files; root: string }>][] = [
  ["hostFiles", async () => ({ files: hostFiles, root: join(realRoot, String(++n)) })],
  ["MemoryFiles", async () => ({ files: new MemoryFiles(), root: `/work/${++n}` })],
];

describe.each(cases)("%s", (_name, make) => {
  const setup = async () => {
    const { files, root } = await make();
    await files.mkdir(root, { recursive: true });
    return { files, at: (p: string) => join(root, p) };
  };

  it("writes, reads, refuses to overwrite with wx, and appends", async () => {
    const { files, at } = await setup();
    await files.writeFile(at("a.txt"), "hello");
    expect(await files.readFile(at("a.txt"), "utf8")).toBe("hello");
    expect((await files.readFile(at("a.txt"))).equals(Buffer.from("hello"))).toBe(true);
    await expect(files.writeFile(at("a.txt"), "x", { flag: "wx" })).rejects.toMatchObject({ code: "EEXIST" });
    await files.writeFile(at("a.txt"), " world", { flag: "a" });
    expect(await files.readFile(at("a.txt"), "utf8")).toBe("hello world");
    await expect(files.readFile(at("missing"))).rejects.toMatchObject({ code: "ENOENT" });
    await expect(files.readFile(at(""))).rejects.toMatchObject({ code: "EISDIR" });
    await expect(files.writeFile(at("no/such/dir/f"), "x")).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("stats files, folders and symlinks, and resolves links", async () => {
    const { files, at } = await setup();
    await files.writeFile(at("t"), "12345");
    await files.mkdir(at("d/e"), { recursive: true });
    const real = await files.realpath(at(""));
    // symlinks are made by the host here; MemoryFiles has its own setup call for them
    if (files instanceof MemoryFiles) files.addSymlink(at("l"), "t");
    else await (await import("node:fs/promises")).symlink("t", at("l"));
    expect((await files.stat(at("t"))).size).toBe(5);
    expect((await files.stat(at("t"))).isFile()).toBe(true);
    expect((await files.stat(at("d"))).isDirectory()).toBe(true);
    expect((await files.lstat(at("l"))).isSymbolicLink()).toBe(true);
    expect((await files.stat(at("l"))).isFile()).toBe(true);
    expect(await files.readlink(at("l"))).toBe("t");
    expect(await files.realpath(at("l"))).toBe(join(real, "t"));
    await expect(files.readlink(at("t"))).rejects.toMatchObject({ code: "EINVAL" });
    expect((await files.readdir(at(""))).sort()).toEqual(["d", "l", "t"]);
    const kinds = Object.fromEntries((await files.entries(at(""))).map((e) => [e.name, [e.isFile(), e.isDirectory(), e.isSymbolicLink()]]));
    expect(kinds).toEqual({ d: [false, true, false], l: [false, false, true], t: [true, false, false] });
    expect(await files.exists(at("l"))).toBe(true);
    expect(await files.exists(at("nope"))).toBe(false);
    await expect(files.readdir(at("t"))).rejects.toMatchObject({ code: "ENOTDIR" });
  });

  it("makes and removes folders", async () => {
    const { files, at } = await setup();
    await files.mkdir(at("x"));
    await expect(files.mkdir(at("x"))).rejects.toMatchObject({ code: "EEXIST" });
    await files.mkdir(at("x"), { recursive: true });
    await expect(files.mkdir(at("p/q"))).rejects.toMatchObject({ code: "ENOENT" });
    await files.writeFile(at("x/f"), "1");
    await files.rm(at("x"), { recursive: true });
    expect(await files.exists(at("x"))).toBe(false);
    await files.rm(at("x"), { force: true });
    await expect(files.rm(at("x"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("renames over a file, copies, truncates", async () => {
    const { files, at } = await setup();
    await files.writeFile(at("a"), "new");
    await files.writeFile(at("b"), "old");
    await files.rename(at("a"), at("b"));
    expect(await files.readFile(at("b"), "utf8")).toBe("new");
    expect(await files.exists(at("a"))).toBe(false);
    await files.copyFile(at("b"), at("c"));
    expect(await files.readFile(at("c"), "utf8")).toBe("new");
    await files.truncate(at("c"), 5);
    expect(await files.readFile(at("c"))).toEqual(Buffer.from([0x6e, 0x65, 0x77, 0, 0]));
    await files.truncate(at("c"), 1);
    expect(await files.readFile(at("c"), "utf8")).toBe("n");
  });

  it("opens files for positional and appending I/O and streams them in chunks", async () => {
    const { files, at } = await setup();
    await expect(files.open(at("none"), "r")).rejects.toMatchObject({ code: "ENOENT" });
    const w = await files.open(at("f"), "w", 0o600);
    await w.write(Buffer.from("abcdef"));
    await w.write(Buffer.from("XY"), 0, 2, 1);
    await w.sync();
    await w.close();
    expect(await files.readFile(at("f"), "utf8")).toBe("aXYdef");
    const a = await files.open(at("f"), "a");
    await a.write(Buffer.from("!"));
    await a.close();
    const r = await files.open(at("f"), "r");
    const buf = Buffer.alloc(3);
    expect((await r.read(buf, 0, 3, 4)).bytesRead).toBe(3);
    expect(buf.toString()).toBe("ef!");
    expect((await r.read(buf, 0, 3, 100)).bytesRead).toBe(0);
    expect((await r.stat()).size).toBe(7);
    await r.close();
    const chunks: string[] = [];
    for await (const c of files.readStream(at("f"), { chunkSize: 3 })) chunks.push(c.toString());
    expect(chunks).toEqual(["aXY", "def", "!"]);
    const dir = await files.open(at(""), "r");
    await dir.sync();
    await dir.close();
    await expect(
      (async () => {
        for await (const _ of files.readStream(at("gone"))) void _;
      })(),
    ).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("makes private temporary folders and reports filesystem sizes", async () => {
    const { files, at } = await setup();
    const t1 = await files.tempDir("machined-conf-");
    const t2 = await files.tempDir("machined-conf-");
    expect(t1).not.toBe(t2);
    expect((await files.stat(t1)).isDirectory()).toBe(true);
    await files.rm(t1, { recursive: true });
    await files.rm(t2, { recursive: true });
    const fs = await files.statfs(at(""));
    expect(fs.blocks).toBeGreaterThan(0);
    expect(fs.bsize).toBeGreaterThan(0);
  });
});
