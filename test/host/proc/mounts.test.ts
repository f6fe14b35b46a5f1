import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseMounts, readMounts } from "../../../src/host/proc/mounts.js";

const ROOT = fileURLToPath(new URL("../fixtures/x86", import.meta.url));

describe("mounts", () => {
  it("lists /proc/mounts entries with sizes from the probe", async () => {
    const stats = await readMounts({
      root: ROOT,
      statfs: async (p) => (p === "/" ? { size: 1000n, available: 400n } : undefined),
    });
    expect(stats[0]).toEqual({ filesystem: "proc", size: 0n, available: 0n, mountedOn: "/proc" });
    expect(stats.find((s) => s.mountedOn === "/")).toEqual({ filesystem: "/dev/vda", size: 1000n, available: 400n, mountedOn: "/" });
    // Octal escapes are decoded so the mount point is the real path.
    expect(stats.at(-1)?.mountedOn).toBe("/run/with space");
  });

  it("ignores blank lines", () => {
    expect(parseMounts("\n/dev/sda1 /boot ext4 rw 0 0\n\n")).toEqual([{ filesystem: "/dev/sda1", mountedOn: "/boot" }]);
  });

  it("reports a non-zero size for this machine's root filesystem", async () => {
    const root = (await readMounts()).find((m) => m.mountedOn === "/");
    expect(root).toBeDefined();
    expect(root!.size).toBeGreaterThan(0n);
    expect(root!.available).toBeLessThanOrEqual(root!.size);
  });
});
