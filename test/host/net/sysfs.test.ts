/** The first ethernet link from a sysfs-shaped fixture folder (PID 1's early network). */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { firstEthernet } from "../../../src/host/net/sysfs.js";

const root = mkdtempSync(join(tmpdir(), "machined-sysnet-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function link(name: string, type: string, ifindex: number, device: boolean) {
  mkdirSync(join(root, name, device ? "device" : ""), { recursive: true });
  writeFileSync(join(root, name, "type"), `${type}\n`);
  writeFileSync(join(root, name, "ifindex"), `${ifindex}\n`);
  if (device) writeFileSync(join(root, name, "device", "uevent"), "DRIVER=virtio_net\n");
}

describe("firstEthernet", () => {
  it("picks the lowest-index ethernet link with a backing device, skipping lo and virtual links", () => {
    link("lo", "772", 1, false);
    link("br0", "1", 2, false);
    link("eth1", "1", 4, true);
    link("eth0", "1", 3, true);
    expect(firstEthernet(root)).toBe("eth0");
  });

  it("is undefined when there is none", () => {
    const empty = mkdtempSync(join(root, "empty-"));
    expect(firstEthernet(empty)).toBeUndefined();
  });
});
