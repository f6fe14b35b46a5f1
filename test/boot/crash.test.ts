/**
 * Crash safety: an upgrade (and the bless after it) is cut at every single write — either before the write
 * ("cut") or halfway through it ("torn") — and the machine is then powered on through the sd-boot and GRUB models
 * against the real files on the image. Whatever the cut, a good slot must come up and the node must be able to
 * finish or redo the operation afterwards.
 *
 * The write sequences are spelled out below: they ARE the design (retire the target's entry first, write the
 * slot, only then point boot entries at it, META last), and a change of order must be a deliberate test change.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import type { BlockIO } from "../../src/boot/blockio.js";
import type { EspFs } from "../../src/boot/esp.js";
import type { Slot } from "../../src/boot/layout.js";
import { listSlotEntries } from "../../src/boot/sdboot.js";
import { beginUpgrade, onBootReady, readSlotState, type SlotPayload } from "../../src/boot/slots.js";
import { FaultyBlockIO, FaultyEsp, PowerBudget, PowerCut } from "./fault-io.js";
import { missingTools, tempDir } from "./helpers.js";
import { bootUntilHealthy, openMeta, payload, Rig } from "./rig.js";

const missing = await missingTools("crash safety", ["mkfs.vfat", "mkfs.ext4", "mcopy", "cp"]);

// rig offsets: BOOT-A at 66 MiB, META at 74 MiB (copies at +0 and +256 KiB)
const UPGRADE_OPS = [
  "esp.remove /loader/entries/a.conf",
  "esp.mkdir /A",
  "esp.copyIn /A/vmlinuz.tmp",
  "esp.rename /A/vmlinuz.tmp -> /A/vmlinuz",
  "esp.copyIn /A/initramfs.img.tmp",
  "esp.rename /A/initramfs.img.tmp -> /A/initramfs.img",
  "write disk@69206016",
  "sync disk",
  "esp.mkdir /loader/entries",
  "esp.write /loader/entries/a+3.conf.tmp",
  "esp.rename /loader/entries/a+3.conf.tmp -> /loader/entries/a+3.conf",
  "esp.mkdir /grub",
  "esp.write /grub/grub.cfg.tmp",
  "esp.rename /grub/grub.cfg.tmp -> /grub/grub.cfg",
  "esp.mkdir /grub",
  "esp.write /grub/grubenv.tmp",
  "esp.rename /grub/grubenv.tmp -> /grub/grubenv",
  "write disk@77594624",
  "sync disk",
  "write disk@77856768",
  "sync disk",
];
/** From this op on, sd-boot sees the trial entry. */
const ENTRY_COMMIT = UPGRADE_OPS.indexOf("esp.rename /loader/entries/a+3.conf.tmp -> /loader/entries/a+3.conf");

const BLESS_OPS = [
  "esp.rename /loader/entries/b+2-1.conf -> /loader/entries/b.conf",
  "esp.mkdir /grub",
  "esp.write /grub/grub.cfg.tmp",
  "esp.rename /grub/grub.cfg.tmp -> /grub/grub.cfg",
  "esp.mkdir /grub",
  "esp.write /grub/grubenv.tmp",
  "esp.rename /grub/grubenv.tmp -> /grub/grubenv",
  "write disk@77594624",
  "sync disk",
  "write disk@77856768",
  "sync disk",
];

interface Case {
  k: number;
  mode: "cut" | "torn";
  op: string;
}

function casesFor(ops: string[]): Case[] {
  const out: Case[] = [];
  ops.forEach((op, k) => {
    out.push({ k, mode: "cut", op });
    if (/^(write|esp\.write|esp\.copyIn)/.test(op)) out.push({ k, mode: "torn", op });
  });
  return out;
}

const faults = (p: PowerBudget) => ({ io: (io: BlockIO) => new FaultyBlockIO(io, p), esp: (e: EspFs) => new FaultyEsp(e, p) });

async function lastGood(rig: Rig): Promise<Slot | undefined> {
  const m = await openMeta(rig);
  try {
    return readSlotState(m).lastKnownGood;
  } finally {
    await m.close();
  }
}

describe.skipIf(missing.length > 0)("power cut during an upgrade of slot A (B/v2 is last-known-good)", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let base: Rig;
  let v3: SlotPayload;
  let n = 0;
  const fresh = () => base.copy(join(dir, `c${n++}.img`));

  beforeAll(async () => {
    ({ dir, cleanup } = await tempDir());
    // A holds v1 (older), B holds v2 and is the last-known-good; rewriting A with v3 has to retire A's old entry.
    base = await Rig.create(dir);
    await base.withCtx(async (ctx) => beginUpgrade(ctx, await payload(dir, "v2")));
    await bootUntilHealthy(base, "sd-boot", new Set());
    await base.withCtx((ctx) => onBootReady(ctx, "B"));
    v3 = await payload(dir, "v3");
  });
  afterAll(async () => cleanup());

  it("writes in the designed order", async () => {
    const power = new PowerBudget();
    await (await fresh()).withCtx((ctx) => beginUpgrade(ctx, v3), faults(power));
    expect(power.ops).toEqual(UPGRADE_OPS);
  });

  it.each(casesFor(UPGRADE_OPS))("$mode at write $k ($op): v3 broken → B/v2 boots; redo works", async (c) => {
    const rig = await fresh();
    await expect(rig.withCtx((ctx) => beginUpgrade(ctx, v3), faults(new PowerBudget(c.k, c.mode)))).rejects.toThrow(PowerCut);
    for (const loader of ["sd-boot", "grub"] as const) {
      const out = await bootUntilHealthy(rig, loader, new Set(["v3"]));
      expect(`${out.slot}:${out.version}`, `${loader}: ${out.attempts.join(" ")}`).toBe("B:v2");
      // before the entry exists nothing may even try A
      if (c.k <= ENTRY_COMMIT) expect(out.attempts, loader).toEqual(["B:v2"]);
    }
    await rig.withCtx((ctx) => onBootReady(ctx, "B"));
    expect(await lastGood(rig)).toBe("B");

    await rig.withCtx((ctx) => beginUpgrade(ctx, v3));
    const again = await bootUntilHealthy(rig, "sd-boot", new Set());
    expect(`${again.slot}:${again.version}`).toBe("A:v3");
  });

  it.each(casesFor(UPGRADE_OPS).filter((c) => c.mode === "cut"))("cut at write $k ($op): v3 healthy → v2 or v3, converges after ready", async (c) => {
    const rig = await fresh();
    await expect(rig.withCtx((ctx) => beginUpgrade(ctx, v3), faults(new PowerBudget(c.k, c.mode)))).rejects.toThrow(PowerCut);
    const out = await bootUntilHealthy(rig, "sd-boot", new Set());
    expect(`${out.slot}:${out.version}`).toBe(c.k > ENTRY_COMMIT ? "A:v3" : "B:v2");
    await rig.withCtx((ctx) => onBootReady(ctx, out.slot));
    expect(await lastGood(rig)).toBe(out.slot);
    for (const loader of ["sd-boot", "grub"] as const) {
      expect((await bootUntilHealthy(rig, loader, new Set())).attempts, loader).toEqual([`${out.slot}:${out.version}`]);
    }
  });
});

describe.skipIf(missing.length > 0)("power cut while blessing slot B after its trial boot", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let base: Rig;
  let n = 0;
  const fresh = () => base.copy(join(dir, `b${n++}.img`));

  beforeAll(async () => {
    ({ dir, cleanup } = await tempDir());
    base = await Rig.create(dir);
    await base.withCtx(async (ctx) => beginUpgrade(ctx, await payload(dir, "v2")));
    await bootUntilHealthy(base, "sd-boot", new Set()); // B is running on trial: b+2-1.conf
  });
  afterAll(async () => cleanup());

  it("writes in the designed order", async () => {
    const power = new PowerBudget();
    await (await fresh()).withCtx((ctx) => onBootReady(ctx, "B"), faults(power));
    expect(power.ops).toEqual(BLESS_OPS);
  });

  it.each(casesFor(BLESS_OPS))("$mode at write $k ($op): B still boots; a repeated ready converges", async (c) => {
    const rig = await fresh();
    await expect(rig.withCtx((ctx) => onBootReady(ctx, "B"), faults(new PowerBudget(c.k, c.mode)))).rejects.toThrow(PowerCut);
    for (const loader of ["sd-boot", "grub"] as const) {
      const out = await bootUntilHealthy(rig, loader, new Set());
      expect(`${out.slot}:${out.version}`, loader).toBe("B:v2");
    }
    expect((await rig.withCtx((ctx) => onBootReady(ctx, "B"))).lastKnownGood).toBe("B");
    expect((await listSlotEntries(rig.esp)).map((e) => e.fileName).sort()).toEqual(["a.conf", "b.conf"]);
  });
});
