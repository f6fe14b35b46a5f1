/** Service log files through the Files capability: the folder made on first write, size rotation, following. */
import { describe, expect, it } from "vitest";
import { MemoryFiles } from "../../src/host/files/index.js";
import { LogManager, followFile } from "../../src/supervisor/logs.js";

describe("service log files on the in-memory filesystem", () => {
  it("creates the folder on the first write and rotates by size, keeping N files", async () => {
    const files = new MemoryFiles();
    const logs = new LogManager("/state/logs", { fileMaxBytes: 100, keepFiles: 2 }, files);
    const l = logs.get("svc");
    for (let i = 0; i < 12; i++) {
      l.write(`${String(i).padStart(2, "0")} ${"x".repeat(36)}\n`);
      await l.flush();
    }
    expect(files.paths().filter((p) => p.startsWith("/state/logs/"))).toEqual(["/state/logs/svc.log", "/state/logs/svc.log.1", "/state/logs/svc.log.2"]);
    for (const f of ["svc.log", "svc.log.1", "svc.log.2"]) expect(files.contents(`/state/logs/${f}`)!.length).toBeLessThanOrEqual(100);
    expect(files.contents("/state/logs/svc.log")!.toString()).toContain("11 ");
    await logs.close();
  });

  it("a full or read-only disk does not break the log: the ring keeps working", async () => {
    const files = new MemoryFiles().fail("/state/logs/svc.log", "open", "EROFS");
    const logs = new LogManager("/state/logs", {}, files);
    logs.get("svc").write("still here\n");
    await logs.get("svc").flush();
    expect(logs.get("svc").tail().toString()).toBe("still here\n");
  });

  it("tails and follows a plain file, restarting when it shrinks", async () => {
    const files = new MemoryFiles().addFile("/var/log/c.log", "a\nb\nc\n");
    const ac = new AbortController();
    const seen: string[] = [];
    const reader = (async () => {
      for await (const chunk of followFile("/var/log/c.log", { tailLines: 2, follow: true, signal: ac.signal, pollMs: 5, files })) {
        seen.push(chunk.toString());
        if (seen.join("").includes("new\n")) ac.abort();
      }
    })();
    while (seen.length === 0) await new Promise((r) => setTimeout(r, 5));
    await files.writeFile("/var/log/c.log", "new\n");
    await reader;
    expect(seen[0]).toBe("b\nc\n");
    expect(seen.join("")).toContain("new\n");
  });
});
