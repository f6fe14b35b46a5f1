import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseNetDev, readNetDev } from "../../../src/host/proc/netdev.js";

const ROOT = fileURLToPath(new URL("../fixtures/x86", import.meta.url));

describe("netdev", () => {
  it("parses per-device counters and sums a named total", async () => {
    const { total, devices } = await readNetDev({ root: ROOT });
    expect(devices.map((d) => d.name)).toEqual(["lo", "ifb0", "ifb1", "eth0"]);
    expect(devices[3]).toMatchObject({ rxBytes: 1034155478n, rxPackets: 42569n, txBytes: 3297646n, txPackets: 32136n });
    expect(total.name).toBe("eth0, ifb0, ifb1, lo");
    expect(total.rxBytes).toBe(1034155478n + 155630n);
    expect(total.txPackets).toBe(32136n + 472n);
  });

  it("keeps all 16 counters in order", () => {
    const { devices } = parseNetDev(" x: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n");
    expect(Object.values(devices[0])).toEqual(["x", ...Array.from({ length: 16 }, (_, i) => BigInt(i + 1))]);
  });

  it("reads this machine's interfaces", async () => {
    const { devices } = await readNetDev();
    expect(devices.map((d) => d.name)).toContain("lo");
  });
});
