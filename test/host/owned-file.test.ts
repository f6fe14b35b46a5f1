/** writeOwnedFile on the real filesystem: exact mode, owner (as root), atomic replacement, no rewrite when unchanged. */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { writeOwnedFile } from "../../src/host/owned-file.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const asRoot = process.getuid?.() === 0;

describe("writeOwnedFile", () => {
  it("creates folders, sets the exact mode and owner, and leaves an unchanged file alone", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "owned-"));
    dirs.push(dir);
    const f = path.join(dir, "a/b/secret.key");
    const old = process.umask(0o077);
    try {
      expect(await writeOwnedFile(f, "one", 0o444, { uid: 65534, gid: 65534 })).toBe(true);
    } finally {
      process.umask(old);
    }
    const st = statSync(f);
    expect(st.mode & 0o7777).toBe(0o444);
    if (asRoot) expect([st.uid, st.gid]).toEqual([65534, 65534]);
    else expect(st.uid).toBe(process.getuid?.());
    expect(readFileSync(f, "utf8")).toBe("one");

    expect(await writeOwnedFile(f, "one", 0o444, { uid: 65534, gid: 65534 })).toBe(false);
    expect(statSync(f).ino).toBe(st.ino);

    // New content replaces the file (a new inode: readers holding the old one keep whole old bytes).
    expect(await writeOwnedFile(f, "two", 0o444, { uid: 65534, gid: 65534 })).toBe(true);
    expect(readFileSync(f, "utf8")).toBe("two");
    expect(statSync(f).ino).not.toBe(st.ino);
    // A wrong mode is repaired even when the bytes are right.
    chmodSync(f, 0o644);
    expect(await writeOwnedFile(f, "two", 0o444)).toBe(true);
    expect(statSync(f).mode & 0o7777).toBe(0o444);
    expect(readdirSync(path.dirname(f))).toEqual(["secret.key"]);
  });

  it("fails without leaving a temporary file when the target cannot be replaced", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "owned-"));
    dirs.push(dir);
    const target = path.join(dir, "x");
    // A folder in the way: the rename fails.
    writeFileSync(path.join(dir, "keep"), "");
    mkdirSync(path.join(target, "inner"), { recursive: true });
    await expect(writeOwnedFile(target, "data", 0o400)).rejects.toThrow();
    expect(readdirSync(dir).sort()).toEqual(["keep", "x"]);
  });
});
