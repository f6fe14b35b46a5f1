import { readFileSync } from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseUptime, readBootId, readDomainname, readHostname, readUptime } from "../../../src/host/proc/system.js";

const ROOT = fileURLToPath(new URL("../fixtures/x86", import.meta.url));
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("system identity", () => {
  it("reads hostname, domain and boot id from a fixture root", async () => {
    expect(await readHostname({ root: ROOT })).toBe("node-1");
    expect(await readDomainname({ root: ROOT })).toBe("");
    expect(await readBootId({ root: ROOT })).toMatch(UUID);
  });

  it("parses /proc/uptime", () => {
    expect(parseUptime("478.54 749.99\n")).toEqual({ uptime: 478.54, idle: 749.99 });
    expect(() => parseUptime("x")).toThrow(/uptime/);
  });

  it("matches this machine", async () => {
    expect(await readHostname()).toBe(os.hostname());
    expect(await readBootId()).toBe(readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim());
    const { uptime } = await readUptime();
    expect(uptime).toBeGreaterThan(0);
    expect(Math.abs(uptime - os.uptime())).toBeLessThan(5);
  });
});
