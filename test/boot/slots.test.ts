import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { readGrubEnv } from "../../src/boot/grubenv.js";
import { MetaTag } from "../../src/boot/meta.js";
import { listSlotEntries, readEspEntries, decideBoot } from "../../src/boot/sdboot.js";
import { slotFromCmdline } from "../../src/boot/slot-files.js";
import { beginUpgrade, onBootReady, readSlotState, rollback } from "../../src/boot/slots.js";
import { missingTools, tempDir } from "./helpers.js";
import { bootUntilHealthy, openMeta, payload, Rig } from "./rig.js";

const missing = await missingTools("A/B slots on a disk image", ["mkfs.vfat", "mkfs.ext4", "mcopy"]);
const none = new Set<string>();

async function entryNames(rig: Rig): Promise<string[]> {
  return (await listSlotEntries(rig.esp)).map((e) => e.fileName).sort();
}

async function state(rig: Rig) {
  const m = await openMeta(rig);
  try {
    return { ...readSlotState(m), upgradeTag: m.getString(MetaTag.Upgrade) };
  } finally {
    await m.close();
  }
}

describe.skipIf(missing.length > 0)("A/B slot policy on a real image", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let base: Rig;
  let n = 0;
  const fresh = () => base.copy(join(dir, `case${n++}.img`));
  beforeAll(async () => {
    ({ dir, cleanup } = await tempDir());
    base = await Rig.create(dir);
  });
  afterAll(async () => cleanup());

  it("installs slot A as the blessed last-known-good, bootable by both loaders", async () => {
    const rig = await fresh();
    expect(await entryNames(rig)).toEqual(["a.conf"]);
    expect(await state(rig)).toMatchObject({ lastKnownGood: "A", pending: undefined, record: { from: null, to: "A", result: "installed", osVersion: "v1", generation: 1 } });
    expect(await readGrubEnv(rig.esp)).toEqual({ next_slot: "", boot_tries: "0", last_good: "A" });
    expect((await bootUntilHealthy(rig, "sd-boot", none)).attempts).toEqual(["A:v1"]);
    expect((await bootUntilHealthy(rig, "grub", none)).attempts).toEqual(["A:v1"]);
    const entry = (await listSlotEntries(rig.esp))[0];
    expect(slotFromCmdline(entry.parsed.options!)).toBe("A");
  });

  it("upgrades into B on trial, and blesses it when it becomes ready", async () => {
    const rig = await fresh();
    const rec = await rig.withCtx(async (ctx) => beginUpgrade(ctx, await payload(dir, "v2")));
    expect(rec).toMatchObject({ from: "A", to: "B", result: "pending", generation: 2, image: "ghcr.io/example/installer:v2" });
    expect(await entryNames(rig)).toEqual(["a.conf", "b+3.conf"]);
    expect(await state(rig)).toMatchObject({ lastKnownGood: "A", pending: "B", triesLeft: 3, upgradeTag: "A" });
    expect(await readGrubEnv(rig.esp)).toEqual({ next_slot: "B", boot_tries: "3", last_good: "A" });

    expect((await bootUntilHealthy(rig, "sd-boot", none)).attempts).toEqual(["B:v2"]);
    expect(await entryNames(rig)).toEqual(["a.conf", "b+2-1.conf"]);
    const res = await rig.withCtx((ctx) => onBootReady(ctx, "B"));
    expect(res).toMatchObject({ action: "blessed", lastKnownGood: "B", record: { result: "success", from: "A", to: "B" } });
    expect(await entryNames(rig)).toEqual(["a.conf", "b.conf"]);
    expect(await state(rig)).toMatchObject({ lastKnownGood: "B", pending: undefined, triesLeft: undefined, upgradeTag: undefined });
    expect(await readGrubEnv(rig.esp)).toEqual({ next_slot: "", boot_tries: "0", last_good: "B" });
    expect((await bootUntilHealthy(rig, "sd-boot", none)).attempts).toEqual(["B:v2"]);
    expect((await bootUntilHealthy(rig, "grub", none)).attempts).toEqual(["B:v2"]);
    // a second ready report is a no-op
    expect((await rig.withCtx((ctx) => onBootReady(ctx, "B"))).action).toBe("none");
  });

  it("refuses a second upgrade while one is on trial", async () => {
    const rig = await fresh();
    await rig.withCtx(async (ctx) => beginUpgrade(ctx, await payload(dir, "v2")));
    await expect(rig.withCtx(async (ctx) => beginUpgrade(ctx, await payload(dir, "v3")))).rejects.toThrow(/slot B is still on trial \(upgrade to v2 started 2026-11-29/);
  });

  it("falls back to A after a broken B spends its tries, and records the failure", async () => {
    const rig = await fresh();
    await rig.withCtx(async (ctx) => beginUpgrade(ctx, { ...(await payload(dir, "v2")), tries: 2 }));
    expect((await bootUntilHealthy(rig, "sd-boot", new Set(["v2"]))).attempts).toEqual(["B:v2", "B:v2", "A:v1"]);
    expect((await bootUntilHealthy(rig, "grub", new Set(["v2"]))).attempts).toEqual(["B:v2", "B:v2", "A:v1"]);
    const res = await rig.withCtx((ctx) => onBootReady(ctx, "A"));
    expect(res).toMatchObject({ action: "trial-failed", lastKnownGood: "A", record: { result: "failed", reason: "slot B (v2) did not become ready; slot A booted instead" } });
    expect(await entryNames(rig)).toEqual(["a.conf", "b+0-2.conf"]);
    expect(await state(rig)).toMatchObject({ lastKnownGood: "A", pending: undefined });
    // and the next upgrade can go ahead
    await rig.withCtx(async (ctx) => beginUpgrade(ctx, await payload(dir, "v3")));
    expect(await entryNames(rig)).toEqual(["a.conf", "b+3.conf"]);
  });

  it("rolls back one step, and refuses a second rollback in a row", async () => {
    const rig = await fresh();
    await expect(rig.withCtx((ctx) => rollback(ctx))).rejects.toThrow(/nothing to roll back to: the last operation was "installed" to slot A/);
    await rig.withCtx(async (ctx) => beginUpgrade(ctx, await payload(dir, "v2")));
    await bootUntilHealthy(rig, "sd-boot", none);
    await rig.withCtx((ctx) => onBootReady(ctx, "B"));

    const rec = await rig.withCtx((ctx) => rollback(ctx));
    expect(rec).toMatchObject({ from: "B", to: "A", result: "rolled-back", osVersion: "v1", generation: 3 });
    expect(await entryNames(rig)).toEqual(["a.conf", "b+0-1.conf"]);
    expect((await bootUntilHealthy(rig, "sd-boot", none)).attempts).toEqual(["A:v1"]);
    expect((await bootUntilHealthy(rig, "grub", none)).attempts).toEqual(["A:v1"]);
    expect(await state(rig)).toMatchObject({ lastKnownGood: "A" });

    await expect(rig.withCtx((ctx) => rollback(ctx))).rejects.toThrow(
      /cannot roll back twice in a row: the last operation already rolled back from slot B to slot A .*Upgrade instead/,
    );
    // upgrading again targets B, the slot we rolled back from
    const up = await rig.withCtx(async (ctx) => beginUpgrade(ctx, await payload(dir, "v3")));
    expect(up).toMatchObject({ from: "A", to: "B", generation: 4 });
  });

  it("rolling back during a trial abandons it; the last-known-good boots", async () => {
    const rig = await fresh();
    await rig.withCtx(async (ctx) => beginUpgrade(ctx, await payload(dir, "v2")));
    await bootUntilHealthy(rig, "sd-boot", none); // running B on trial
    const rec = await rig.withCtx((ctx) => rollback(ctx));
    expect(rec).toMatchObject({ from: "B", to: "A", result: "rolled-back", reason: "rollback requested while slot B was on trial" });
    expect((await bootUntilHealthy(rig, "sd-boot", none)).attempts).toEqual(["A:v1"]);
    expect((await bootUntilHealthy(rig, "grub", none)).attempts).toEqual(["A:v1"]);
    await expect(rig.withCtx((ctx) => rollback(ctx))).rejects.toThrow(/cannot roll back twice in a row/);
  });

  it("never falls back to a slot older than the last-known-good", async () => {
    // A(v1) → B(v2) blessed → A(v3) blessed: B now holds an older version than the last-known-good A.
    const rig = await fresh();
    for (const [v, slot] of [["v2", "B"], ["v3", "A"]] as const) {
      await rig.withCtx(async (ctx) => beginUpgrade(ctx, await payload(dir, v)));
      await bootUntilHealthy(rig, "sd-boot", none);
      await rig.withCtx((ctx) => onBootReady(ctx, slot));
    }
    const { model } = await readEspEntries(rig.esp);
    expect(decideBoot(model)!.entry.slot).toBe("A");
    // a broken v4 in B must come back to A (v3), never to anything older
    await rig.withCtx(async (ctx) => beginUpgrade(ctx, await payload(dir, "v4")));
    expect((await bootUntilHealthy(rig, "sd-boot", new Set(["v4"]))).version).toBe("v3");
    expect((await bootUntilHealthy(rig, "grub", new Set(["v4"]))).version).toBe("v3");
  });

  it("blesses a trial boot even when META never heard of the upgrade (cut before write-meta)", async () => {
    const rig = await fresh();
    await expect(
      rig.withCtx(async (ctx) =>
        beginUpgrade(
          {
            ...ctx,
            onStep: (s) => {
              if (s === "write-meta") throw new Error("stop");
            },
          },
          await payload(dir, "v2"),
        ),
      ),
    ).rejects.toThrow("stop");
    expect(await state(rig)).toMatchObject({ lastKnownGood: "A", pending: undefined });
    expect((await bootUntilHealthy(rig, "sd-boot", none)).attempts).toEqual(["B:v2"]);
    const res = await rig.withCtx((ctx) => onBootReady(ctx, "B"));
    expect(res).toMatchObject({ action: "blessed", lastKnownGood: "B", record: { reason: "trial boot reached ready without a pending upgrade in META" } });
  });

  it("works without GRUB on arm64 (sd-boot only, no grub files are created)", async () => {
    const rig = await Rig.create(dir, "arm64.img", "arm64");
    await rig.withCtx(async (ctx) => beginUpgrade(ctx, await payload(dir, "v2")));
    expect(await rig.esp.exists("/grub")).toBe(false);
    expect((await bootUntilHealthy(rig, "sd-boot", new Set(["v2"]))).attempts).toEqual(["B:v2", "B:v2", "B:v2", "A:v1"]);
    expect((await rig.withCtx((ctx) => onBootReady(ctx, "A"))).action).toBe("trial-failed");
  });
});
