/**
 * A/B slot policy. The bootloaders (sd-boot counters, our grub.cfg + grubenv) make fallback automatic; this module
 * decides what to write and in which order so that a power cut at any point still leaves a bootable good slot:
 *
 *   beginUpgrade: retire-target (drop the target's old entry; grubenv → no trial)
 *              → write-slot    (kernel/initramfs on the ESP, rootfs into BOOT-<T>)
 *              → write-entries (sd-boot "<t>+N.conf" with a newer version; grub.cfg; grubenv next_slot/boot_tries)
 *              → write-meta    (pending, tries, record, Talos Upgrade tag) — one flush.
 *   Until write-entries completes nothing points at the half-written slot; after it, the bootloaders own the
 *   trial and META is only bookkeeping, so every later step is optional for safety.
 */
import { failedPrecondition } from "../machinery/errors.js";
import type { EspFs } from "./esp.js";
import { bootVarsFromEnv, hasGrub, MAX_GRUB_TRIES, readGrubEnv, writeBootVars } from "./grubenv.js";
import { writeGrubConfig, type GrubSlotEntry } from "./grub-script.js";
import type { Slot } from "./layout-plan.js";
import type { Meta } from "./meta.js";
import { ENTRIES_DIR, blessSlot, highestGeneration, listSlotEntries, markSlotBad, removeSlotEntries, writeSlotEntry, type SlotEntry } from "./sdboot.js";
import type { EntrySpec } from "./sdboot-entry.js";
import { removeTemporaries, slotCmdline, slotInitrdPath, slotKernelPath, writeSlotBootFiles, type SlotImageWriter, type SlotPayload } from "./slot-files.js";
import { otherSlot, readSlotState, setSlotState, type SlotState, type UpgradeRecord } from "./slot-state.js";

export { otherSlot, readSlotState, type SlotState, type UpgradeRecord } from "./slot-state.js";
export type { SlotPayload, SlotImageWriter } from "./slot-files.js";

export type UpgradeStep = "retire-target" | "write-slot" | "write-entries" | "write-meta";

export interface SlotContext {
  meta: Meta;
  esp: EspFs;
  /** Writes rootfs images into BOOT-A/BOOT-B; optional when payloads carry no rootfs. */
  slotImages?: SlotImageWriter;
  now?: () => Date;
  /** Called before each step (tests use it to stop between steps). */
  onStep?: (step: UpgradeStep) => void | Promise<void>;
}

export const DEFAULT_TRIES = 3;

const nowIso = (ctx: SlotContext) => (ctx.now ?? (() => new Date()))().toISOString();

/** META may be blank or lost; the newest blessed entry on the ESP is then the best evidence of a good slot. */
function lastGoodFrom(state: SlotState, entries: SlotEntry[]): Slot | undefined {
  if (state.lastKnownGood) return state.lastKnownGood;
  const blessed = entries.filter((e) => !e.counter).sort((a, b) => b.generation - a.generation);
  return blessed[0]?.slot;
}

function specFromEntry(e: SlotEntry, generation: number): EntrySpec {
  return {
    slot: e.slot,
    generation,
    osVersion: e.osVersion ?? "unknown",
    linux: e.parsed.linux ?? slotKernelPath(e.slot),
    initrd: e.parsed.initrd.length > 0 ? e.parsed.initrd : [slotInitrdPath(e.slot)],
    options: e.parsed.options ?? "",
  };
}

async function syncGrub(esp: EspFs, lastGood: Slot, trial?: { slot: Slot; tries: number }): Promise<void> {
  if (!(await hasGrub(esp))) return;
  const entries: GrubSlotEntry[] = (await listSlotEntries(esp)).map((e) => ({
    slot: e.slot,
    title: e.parsed.title ?? `machined (slot ${e.slot})`,
    linux: e.parsed.linux ?? slotKernelPath(e.slot),
    initrd: e.parsed.initrd,
    options: e.parsed.options ?? "",
  }));
  // grub.cfg first, so grubenv never names a slot that grub.cfg lacks a menu entry for
  await writeGrubConfig(esp, { entries, lastGood });
  await writeBootVars(esp, { nextSlot: trial?.slot, bootTries: trial?.tries ?? 0, lastGood });
}

async function writeSlot(ctx: SlotContext, slot: Slot, p: SlotPayload): Promise<void> {
  await writeSlotBootFiles(ctx.esp, slot, p);
  if (p.rootfs) {
    if (!ctx.slotImages) throw new Error(`payload has a rootfs image but no slot image writer was given for slot ${slot}`);
    await ctx.slotImages.write(slot, p.rootfs);
  }
}

function entrySpec(slot: Slot, generation: number, p: SlotPayload): EntrySpec {
  return { slot, generation, osVersion: p.osVersion, linux: slotKernelPath(slot), initrd: [slotInitrdPath(slot)], options: slotCmdline(p.cmdline, slot) };
}

/** First install: slot A becomes the blessed last-known-good right away (there is nothing to fall back to). */
export async function installFirstSlot(ctx: SlotContext, p: SlotPayload, slot: Slot = "A"): Promise<UpgradeRecord> {
  const generation = (await highestGeneration(ctx.esp)) + 1;
  await removeTemporaries(ctx.esp, [ENTRIES_DIR, "/grub", "/A", "/B"]);
  await removeSlotEntries(ctx.esp, slot);
  await writeSlot(ctx, slot, p);
  await writeSlotEntry(ctx.esp, entrySpec(slot, generation, p));
  await syncGrub(ctx.esp, slot);
  const at = nowIso(ctx);
  const record: UpgradeRecord = { from: null, to: slot, osVersion: p.osVersion, image: p.image, generation, started: at, finished: at, result: "installed" };
  setSlotState(ctx.meta, { lastKnownGood: slot, record });
  await ctx.meta.flush();
  return record;
}

export async function beginUpgrade(ctx: SlotContext, p: SlotPayload & { tries?: number }): Promise<UpgradeRecord> {
  const tries = p.tries ?? DEFAULT_TRIES;
  if (!Number.isInteger(tries) || tries < 1 || tries > MAX_GRUB_TRIES) throw failedPrecondition(`boot tries must be 1..${MAX_GRUB_TRIES}, got ${tries}`);
  const state = readSlotState(ctx.meta);
  const entries = await listSlotEntries(ctx.esp);
  const lastGood = lastGoodFrom(state, entries);
  if (!lastGood) throw failedPrecondition(`no last-known-good slot: META has none and the ${ctx.esp.where} has no blessed boot entry; install first`);
  if (state.pending) {
    const r = state.record;
    throw failedPrecondition(
      `slot ${state.pending} is still on trial (upgrade to ${r?.osVersion ?? "?"} started ${r?.started ?? "?"}); ` +
        "it must become ready or be rolled back before another upgrade",
    );
  }
  const target = otherSlot(lastGood);
  const generation = Math.max(...entries.map((e) => e.generation), state.record?.generation ?? 0) + 1;

  await ctx.onStep?.("retire-target");
  await removeTemporaries(ctx.esp, [ENTRIES_DIR, "/grub", `/${target}`]);
  await removeSlotEntries(ctx.esp, target);
  if (await hasGrub(ctx.esp)) {
    const vars = bootVarsFromEnv((await readGrubEnv(ctx.esp)) ?? {});
    if (vars.bootTries !== 0 || vars.nextSlot !== undefined || vars.lastGood !== lastGood) {
      await writeBootVars(ctx.esp, { nextSlot: undefined, bootTries: 0, lastGood });
    }
  }

  await ctx.onStep?.("write-slot");
  await writeSlot(ctx, target, p);

  await ctx.onStep?.("write-entries");
  await writeSlotEntry(ctx.esp, entrySpec(target, generation, p), tries);
  await syncGrub(ctx.esp, lastGood, { slot: target, tries });

  await ctx.onStep?.("write-meta");
  const record: UpgradeRecord = { from: lastGood, to: target, osVersion: p.osVersion, image: p.image, generation, started: nowIso(ctx), result: "pending" };
  setSlotState(ctx.meta, { lastKnownGood: lastGood, pending: target, triesLeft: tries, record });
  await ctx.meta.flush();
  return record;
}

export interface BootReadyResult {
  action: "blessed" | "trial-failed" | "none";
  lastKnownGood: Slot;
  record?: UpgradeRecord;
  note?: string;
}

/**
 * Called once the booted system is Ready. The booted entry still carrying a counter means this boot WAS the trial
 * (even if META never learned about it because the upgrade was cut after write-entries).
 */
export async function onBootReady(ctx: SlotContext, booted: Slot): Promise<BootReadyResult> {
  const state = readSlotState(ctx.meta);
  const entries = await listSlotEntries(ctx.esp);
  const bootedCounted = entries.some((e) => e.slot === booted && e.counter !== undefined);
  const at = nowIso(ctx);

  if (bootedCounted || state.pending === booted) {
    await blessSlot(ctx.esp, booted);
    await syncGrub(ctx.esp, booted);
    const prev = state.record;
    const record: UpgradeRecord =
      prev && prev.to === booted && prev.result === "pending"
        ? { ...prev, result: "success", finished: at }
        : { from: state.lastKnownGood ?? null, to: booted, osVersion: entries.find((e) => e.slot === booted)?.osVersion ?? "unknown", generation: Math.max(0, ...entries.map((e) => e.generation)), started: at, finished: at, result: "success", reason: "trial boot reached ready without a pending upgrade in META" };
    setSlotState(ctx.meta, { lastKnownGood: booted, record });
    await ctx.meta.flush();
    return { action: "blessed", lastKnownGood: booted, record };
  }

  const lastGood = lastGoodFrom(state, entries) ?? booted;
  if (state.pending && state.pending !== booted) {
    const failed = state.pending;
    await markSlotBad(ctx.esp, failed);
    await syncGrub(ctx.esp, lastGood);
    const prev = state.record;
    const reason = `slot ${failed} (${prev?.osVersion ?? "?"}) did not become ready; slot ${booted} booted instead`;
    const record: UpgradeRecord = prev ? { ...prev, result: "failed", finished: at, reason } : { from: lastGood, to: failed, osVersion: "unknown", generation: 0, started: at, finished: at, result: "failed", reason };
    setSlotState(ctx.meta, { lastKnownGood: lastGood, record });
    await ctx.meta.flush();
    return { action: "trial-failed", lastKnownGood: lastGood, record };
  }

  if (!state.lastKnownGood) {
    setSlotState(ctx.meta, { ...state, lastKnownGood: booted });
    await ctx.meta.flush();
    return { action: "none", lastKnownGood: booted, record: state.record, note: "META had no last-known-good slot; recorded the booted one" };
  }
  const note = booted === state.lastKnownGood ? undefined : `booted slot ${booted} is not the last-known-good slot ${state.lastKnownGood} (chosen by hand?); left unchanged`;
  return { action: "none", lastKnownGood: state.lastKnownGood, record: state.record, note };
}

/**
 * One step back. During a trial: abandon it (the trial slot is marked bad; the last-known-good boots next).
 * Otherwise: return to the slot the last successful upgrade came from. Never twice in a row: after a rollback the
 * slot we left is not a known-good predecessor of anything.
 */
export async function rollback(ctx: SlotContext): Promise<UpgradeRecord> {
  const state = readSlotState(ctx.meta);
  const entries = await listSlotEntries(ctx.esp);
  const lastGood = lastGoodFrom(state, entries);
  const at = nowIso(ctx);
  const prev = state.record;

  if (state.pending && lastGood && state.pending !== lastGood) {
    await markSlotBad(ctx.esp, state.pending);
    await syncGrub(ctx.esp, lastGood);
    const record: UpgradeRecord = {
      from: state.pending,
      to: lastGood,
      osVersion: entries.find((e) => e.slot === lastGood)?.osVersion ?? "unknown",
      image: prev?.image,
      generation: prev?.generation ?? 0,
      started: at,
      finished: at,
      result: "rolled-back",
      reason: `rollback requested while slot ${state.pending} was on trial`,
    };
    setSlotState(ctx.meta, { lastKnownGood: lastGood, record });
    await ctx.meta.flush();
    return record;
  }

  if (prev?.result === "rolled-back") {
    throw failedPrecondition(
      `cannot roll back twice in a row: the last operation already rolled back from slot ${prev.from ?? "?"} to slot ${prev.to} ` +
        `(at ${prev.finished ?? prev.started}); slot ${prev.from ?? "?"} is not a known-good predecessor. Upgrade instead.`,
    );
  }
  if (!prev || !lastGood || prev.result !== "success" || prev.to !== lastGood || !prev.from) {
    const what = prev ? `the last operation was "${prev.result}" ${prev.from ? `from slot ${prev.from} ` : ""}to slot ${prev.to}` : "META records no upgrade";
    throw failedPrecondition(`nothing to roll back to: ${what}, so there is no previous known-good slot`);
  }
  const target = prev.from;
  const targetEntry = entries.find((e) => e.slot === target);
  if (!targetEntry || targetEntry.counter?.left === 0) {
    throw failedPrecondition(`cannot roll back to slot ${target}: it has no usable boot entry on the ${ctx.esp.where}`);
  }
  const kernel = targetEntry.parsed.linux;
  if (!kernel || !(await ctx.esp.exists(kernel))) {
    throw failedPrecondition(`cannot roll back to slot ${target}: its kernel ${kernel ?? "(none)"} is missing from the ${ctx.esp.where}`);
  }
  const generation = Math.max(...entries.map((e) => e.generation)) + 1;
  // the target sorts first from this rename on; the slot we leave is then retired as bad
  await writeSlotEntry(ctx.esp, specFromEntry(targetEntry, generation));
  await markSlotBad(ctx.esp, lastGood);
  await syncGrub(ctx.esp, target);
  const record: UpgradeRecord = {
    from: lastGood,
    to: target,
    osVersion: targetEntry.osVersion ?? "unknown",
    generation,
    started: at,
    finished: at,
    result: "rolled-back",
    reason: "rollback requested",
  };
  setSlotState(ctx.meta, { lastKnownGood: target, record });
  await ctx.meta.flush();
  return record;
}
