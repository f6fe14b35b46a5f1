/**
 * The hostname watch: the kernel's own change notification on /proc/sys/kernel/{hostname,domainname}
 * (real OS, in a private UTS namespace so the host keeps its name), and the inotify fallback used for a
 * different root. Skips itself without root or unshare, saying why.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { watchHostname } from "../../../src/host/net/hostname.js";
import { eventually } from "../../state/helpers.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/hostname-watch.ts", import.meta.url));
let skipReason = "";
if (process.getuid?.() !== 0) skipReason = "needs root for a private UTS namespace";
else if (spawnSync("unshare", ["--uts", "true"]).status !== 0) skipReason = "unshare --uts is not available";

describe.skipIf(Boolean(skipReason))("kernel hostname notifications", () => {
  it("wake the watcher once per change and never at rest", () => {
    const r = spawnSync("unshare", ["--uts", process.execPath, "--import", "tsx", FIXTURE], { encoding: "utf8", timeout: 30_000 });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim().split("\n").pop()!);
    expect(out.atRest).toBe(0);
    expect(out.names).toEqual(["renamed-1", "renamed-2", "renamed-3"]);
    // Three hostname changes and one domain name change.
    expect(out.changes).toBe(4);
  });
});

describe("hostname watch under another root (plain files, inotify)", () => {
  const root = mkdtempSync(path.join(tmpdir(), "machined-hostname-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("wakes when the file is replaced", async () => {
    mkdirSync(path.join(root, "proc/sys/kernel"), { recursive: true });
    writeFileSync(path.join(root, "proc/sys/kernel/hostname"), "node-1\n");
    let changes = 0;
    const stop = watchHostname(() => changes++, { root });
    try {
      writeFileSync(path.join(root, "proc/sys/kernel/hostname"), "node-2\n");
      await eventually(() => changes > 0, 5000, "file change");
    } finally {
      stop();
    }
  });
});

if (skipReason) console.log(`skipping kernel hostname notification test: ${skipReason}`);
