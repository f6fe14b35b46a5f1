/** Service logs: line tails, the bounded ring, follow, file rotation, and the agent's own log sink. */
import { appendFileSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { noCgroups } from "../../src/host/cgroups.js";
import { LogManager, followFile, tailLines } from "../../src/supervisor/logs.js";
import { ProcessRunner } from "../../src/supervisor/runners/process.js";
import { MachinedService } from "../../src/supervisor/services/machined.js";
import { Supervisor } from "../../src/supervisor/supervisor.js";
import { collect, tempDir, waitUntil } from "./helpers.js";

const sups: Supervisor[] = [];
afterAll(async () => {
  await Promise.all(sups.map((s) => s.shutdown()));
});

describe("logs", () => {
  it("takes the last N lines, ignoring a trailing newline", () => {
    const b = Buffer.from("a\nb\nc\n");
    expect(tailLines(b, 2).toString()).toBe("b\nc\n");
    expect(tailLines(b, 0).toString()).toBe("");
    expect(tailLines(b, 10).toString()).toBe("a\nb\nc\n");
    expect(tailLines(b, -1).toString()).toBe("a\nb\nc\n");
    expect(tailLines(Buffer.from("a\nb\npartial"), 1).toString()).toBe("partial");
    expect(tailLines(Buffer.from(""), 3).toString()).toBe("");
  });

  it("keeps the ring bounded and starting at a line boundary", () => {
    const logs = new LogManager(null, { ringBytes: 64 * 1024 });
    const l = logs.get("big");
    for (let i = 0; i < 3000; i++) l.write(`line ${String(i).padStart(5, "0")} ${"x".repeat(80)}\n`);
    const all = l.tail();
    expect(all.length).toBeLessThanOrEqual(64 * 1024);
    expect(all.toString().startsWith("line ")).toBe(true);
    expect(all.toString().endsWith(`line 02999 ${"x".repeat(80)}\n`)).toBe(true);
    expect(l.lastLine()).toBe(`line 02999 ${"x".repeat(80)}`);
    expect(logs.ids()).toEqual(["big"]);
  });

  it("serves a service's output as tail then follow", async () => {
    const dir = tempDir("sup-logs");
    const sup = new Supervisor({ cgroups: noCgroups, logs: new LogManager(join(dir, "logs")) });
    sups.push(sup);
    sup.load({
      id: "talker",
      runner: () => new ProcessRunner({ args: ["/bin/sh", "-c", "i=0; while [ $i -lt 30 ]; do i=$((i+1)); echo line$i; sleep 0.03; done; exec sleep 100"] }),
    });
    sup.start("talker");
    await waitUntil(() => sup.logs.get("talker").tail().toString().includes("line5\n"), 5000, "first lines");
    const ac = new AbortController();
    const chunks: string[] = [];
    const reader = (async () => {
      for await (const c of sup.logsOf("talker", { tailLines: 2, follow: true, signal: ac.signal })) {
        chunks.push(c.toString());
        if (chunks.join("").includes("line30\n")) ac.abort();
      }
    })();
    await Promise.race([reader, new Promise((_, rej) => setTimeout(() => rej(new Error("follow did not see line30")), 5000))]);
    expect(chunks[0].trim().split("\n")).toHaveLength(2);
    const text = chunks.join("");
    const nums = [...text.matchAll(/line(\d+)/g)].map((m) => Number(m[1]));
    // contiguous: nothing lost between the tail and the follow
    expect(nums).toEqual(Array.from({ length: nums.length }, (_, i) => nums[0] + i));
    expect(nums.at(-1)).toBe(30);
    // without follow the iterator ends by itself
    expect((await collect(sup.logsOf("talker", { tailLines: 1 }))).trim()).toBe("line30");
    await sup.stop("talker");
    await sup.logs.get("talker").flush();
    expect(readFileSync(join(dir, "logs", "talker.log"), "utf8")).toContain("line1\nline2\n");
  });

  it("rotates the file by size and keeps the configured number of old files", async () => {
    const dir = tempDir("sup-rot");
    const logs = new LogManager(dir, { fileMaxBytes: 1000, keepFiles: 2 });
    const l = logs.get("svc");
    for (let i = 0; i < 60; i++) {
      l.write(`${String(i).padStart(3, "0")} ${"y".repeat(95)}\n`);
      if (i % 7 === 0) await l.flush();
    }
    await l.flush();
    expect(existsSync(join(dir, "svc.log"))).toBe(true);
    expect(existsSync(join(dir, "svc.log.1"))).toBe(true);
    expect(existsSync(join(dir, "svc.log.2"))).toBe(true);
    expect(existsSync(join(dir, "svc.log.3"))).toBe(false);
    for (const f of ["svc.log", "svc.log.1", "svc.log.2"]) expect(statSync(join(dir, f)).size).toBeLessThanOrEqual(1000);
    expect(readFileSync(join(dir, "svc.log"), "utf8").trimEnd().endsWith(`059 ${"y".repeat(95)}`)).toBe(true);
    await logs.close();
  });

  it("gives the agent a writable sink for its own logger (service machined)", async () => {
    const logs = new LogManager(null);
    const log = pino({ base: undefined }, logs.writer("machined"));
    log.info({ svc: "x" }, "hello from pino");
    await waitUntil(() => logs.get("machined").tail().length > 0, 2000, "pino line");
    const line = JSON.parse(logs.get("machined").tail(1).toString()) as { msg: string; svc: string };
    expect(line).toMatchObject({ msg: "hello from pino", svc: "x" });
  });

  it("lists the agent as service machined, serving the agent's log", async () => {
    const sup = new Supervisor({ cgroups: noCgroups, log: () => {} });
    sups.push(sup);
    const log = pino({ base: undefined }, sup.logs.writer("machined"));
    sup.load(new MachinedService());
    sup.start("machined");
    await sup.waitFor("machined", "up", AbortSignal.timeout(2000));
    expect(sup.info("machined")?.events.at(-1)?.msg).toBe("Service started as goroutine");
    log.warn("agent says hi");
    const text = await collect(sup.logsOf("machined", { tailLines: 1 }));
    expect(JSON.parse(text)).toMatchObject({ msg: "agent says hi" });
    expect(sup.logs.ids()).toContain("machined");
    await sup.stop("machined");
  });

  it("tails and follows a plain log file", async () => {
    const dir = tempDir("sup-ff");
    const f = join(dir, "c.log");
    writeFileSync(f, "one\ntwo\nthree\n");
    const ac = new AbortController();
    const got: string[] = [];
    const done = (async () => {
      for await (const c of followFile(f, { tailLines: 1, follow: true, signal: ac.signal, pollMs: 20 })) {
        got.push(c.toString());
        if (got.join("").includes("four")) ac.abort();
      }
    })();
    await waitUntil(() => got.length > 0, 2000, "tail");
    appendFileSync(f, "four\n");
    await done;
    expect(got.join("")).toBe("three\nfour\n");
  });
});
