import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseLoadavg, readLoadavg } from "../../../src/host/proc/loadavg.js";

const ROOT = fileURLToPath(new URL("../fixtures/x86", import.meta.url));

describe("loadavg", () => {
  it("parses the three load averages", async () => {
    expect(parseLoadavg("1.22 0.67 0.31 1/93 12633\n")).toEqual({ load1: 1.22, load5: 0.67, load15: 0.31 });
    expect(await readLoadavg({ root: ROOT })).toEqual({ load1: 17.39, load5: 9.83, load15: 4.46 });
  });

  it("rejects garbage", () => {
    expect(() => parseLoadavg("nope\n")).toThrow(/loadavg/);
  });

  it("reads this machine's load", async () => {
    const l = await readLoadavg();
    expect(l.load1).toBeGreaterThanOrEqual(0);
    expect(l.load15).toBeGreaterThanOrEqual(0);
  });
});
