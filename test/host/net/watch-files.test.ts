/** watchFiles: inotify on the folders of the files, following symlinks and waiting for missing folders. */
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { watchFiles } from "../../../src/host/net/watch-files.js";
import { eventually, sleep } from "../../state/helpers.js";

const dirs: string[] = [];
const stops: Array<() => void> = [];
afterEach(() => {
  for (const s of stops.splice(0)) s();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = mkdtempSync(path.join(tmpdir(), "machined-watch-"));
  dirs.push(d);
  return d;
};
function counting(files: string[]) {
  const c = { n: 0 };
  stops.push(watchFiles(files, () => c.n++));
  return c;
}

describe("watchFiles", () => {
  it("wakes on write, atomic replace and removal of a watched file, not for its neighbours", async () => {
    const d = tmp();
    const f = path.join(d, "resolv.conf");
    writeFileSync(f, "nameserver 10.0.0.1\n");
    const c = counting([f]);
    writeFileSync(path.join(d, "unrelated"), "x");
    await sleep(100);
    expect(c.n).toBe(0);
    writeFileSync(f, "nameserver 10.0.0.2\n");
    await eventually(() => c.n >= 1, 5000, "write");
    const before = c.n;
    writeFileSync(`${f}.tmp`, "nameserver 10.0.0.3\n");
    renameSync(`${f}.tmp`, f);
    await eventually(() => c.n > before, 5000, "rename over");
    const again = c.n;
    rmSync(f);
    await eventually(() => c.n > again, 5000, "removal");
  });

  it("waits for a folder that does not exist yet", async () => {
    const d = tmp();
    const f = path.join(d, "etc", "sub", "hosts");
    const c = counting([f]);
    mkdirSync(path.join(d, "etc", "sub"), { recursive: true });
    await eventually(() => c.n >= 1, 5000, "folder created");
    const before = c.n;
    writeFileSync(f, "127.0.0.1 localhost\n");
    await eventually(() => c.n > before, 5000, "file in the new folder");
  });

  it("follows a symlinked file to its target's folder", async () => {
    const d = tmp();
    mkdirSync(path.join(d, "run"));
    const target = path.join(d, "run", "stub-resolv.conf");
    writeFileSync(target, "nameserver 10.0.0.1\n");
    mkdirSync(path.join(d, "etc"));
    symlinkSync("../run/stub-resolv.conf", path.join(d, "etc", "resolv.conf"));
    const c = counting([path.join(d, "etc", "resolv.conf")]);
    writeFileSync(`${target}.new`, "nameserver 10.0.0.9\n");
    renameSync(`${target}.new`, target);
    await eventually(() => c.n >= 1, 5000, "target replaced");
  });

  it("stops delivering once stopped", async () => {
    const d = tmp();
    const f = path.join(d, "hosts");
    let n = 0;
    const stop = watchFiles([f], () => n++);
    stop();
    writeFileSync(f, "x");
    await sleep(150);
    expect(n).toBe(0);
  });
});
