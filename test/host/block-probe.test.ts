/**
 * Superblock probing on filesystems made here by the real Debian tools in image files (no root, no devices):
 * name, UUID and label as blkid reports them, plus sizes; a blank region finds nothing.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, truncateSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { probeBytes, probeVolume } from "../../src/host/block-probe.js";

const dir = mkdtempSync(join(tmpdir(), "machined-probe-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const have = (bin: string) => spawnSync("sh", ["-c", `command -v ${bin}`]).status === 0;
function image(name: string, mb: number): string {
  const p = join(dir, name);
  writeFileSync(p, "");
  truncateSync(p, mb * 1024 * 1024);
  return p;
}

describe("block probe", () => {
  it.skipIf(!have("mkfs.ext4"))("finds ext4 with its UUID, label and size", async () => {
    const p = image("ext4.img", 16);
    execFileSync("mkfs.ext4", ["-q", "-F", "-L", "EPHEMERAL", "-U", "0c8b7b5e-2f4f-4f0e-9a31-7e0c1f4b9d11", p]);
    expect(await probeVolume(p)).toMatchObject({ name: "ext4", uuid: "0c8b7b5e-2f4f-4f0e-9a31-7e0c1f4b9d11", label: "EPHEMERAL", probedSize: 16 * 1024 * 1024 });
  });

  it.skipIf(!have("mkfs.xfs"))("finds xfs with its UUID, label and size", async () => {
    const p = image("xfs.img", 300);
    execFileSync("mkfs.xfs", ["-q", "-f", "-L", "STATE", "-m", "uuid=5b1f2a0c-9e7d-4c3b-8a21-0f6e5d4c3b2a", p]);
    const r = await probeVolume(p);
    expect(r).toMatchObject({ name: "xfs", uuid: "5b1f2a0c-9e7d-4c3b-8a21-0f6e5d4c3b2a", label: "STATE", blockSize: 4096 });
    expect(r.probedSize).toBe(300 * 1024 * 1024);
  });

  it.skipIf(!have("mkfs.vfat"))("finds vfat with its serial as UUID and label", async () => {
    const p = image("vfat.img", 40);
    execFileSync("mkfs.vfat", ["-F", "32", "-n", "EFI", "-i", "1a2b3c4d", p], { stdio: "ignore" });
    expect(await probeVolume(p)).toMatchObject({ name: "vfat", uuid: "1A2B-3C4D", label: "EFI" });
  });

  it.skipIf(!have("mkswap"))("finds swap", async () => {
    const p = image("swap.img", 8);
    execFileSync("mkswap", ["-L", "SWAP", "-U", "11111111-2222-3333-4444-555555555555", p], { stdio: "ignore" });
    expect(await probeVolume(p)).toMatchObject({ name: "swap", uuid: "11111111-2222-3333-4444-555555555555", label: "SWAP" });
  });

  it("finds Talos META (the ADV magic), and nothing on a blank region or at an offset past the data", async () => {
    const meta = Buffer.alloc(4096);
    meta.writeUInt32BE(0x5a4b3c2d, 0);
    expect(probeBytes(meta)).toEqual({ name: "talosmeta" });
    expect(probeBytes(Buffer.alloc(80 * 1024))).toEqual({ name: "" });
    const p = image("blank.img", 1);
    expect(await probeVolume(p, 512 * 1024, 512 * 1024)).toEqual({ name: "" });
  });
});
