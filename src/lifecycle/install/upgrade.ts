/**
 * Writing an upgrade into the inactive slot (boot/slots.ts decides the order of writes), plus staged upgrades:
 * `--stage` keeps the verified payload and records it in META (Talos's tags 7 and 8); the next boot writes it
 * before the bootloader runs, so it takes effect at that reboot.
 */
import { otherSlot, readSlotState, beginUpgrade, type UpgradeRecord } from "../../boot/slots.js";
import { listSlotEntries } from "../../boot/sdboot.js";
import { MetaTag } from "../../boot/meta.js";
import type { Slot } from "../../boot/layout.js";
import { MANIFEST_NAME, toSlotPayload, type InstallerPayload } from "./payload.js";
import type { SystemDisk } from "./system-disk.js";
import type { Reporter } from "./tasks.js";

export interface UpgradeOptions {
  tries: number;
  extraKernelArgs: string[];
  report: Reporter;
}

/** Refuses early (before anything is pulled or stopped) when a trial is still pending. */
export async function checkNoTrial(disk: SystemDisk): Promise<void> {
  const state = await disk.withMeta(async (m) => readSlotState(m));
  if (state.pending) {
    const r = state.record;
    throw new Error(
      `slot ${state.pending} is still on trial (upgrade to ${r?.osVersion ?? "?"} started ${r?.started ?? "?"}); it must become ready or be rolled back before another upgrade`,
    );
  }
}

export async function writeInactiveSlot(disk: SystemDisk, payload: InstallerPayload, o: UpgradeOptions): Promise<UpgradeRecord> {
  let record: UpgradeRecord | undefined;
  await o.report.phase("upgrade", [
    [
      "writeInactiveSlot",
      async () => {
        record = await disk.withCtx(async (ctx) => {
          const state = readSlotState(ctx.meta);
          const blessed = (await listSlotEntries(ctx.esp)).filter((e) => !e.counter).sort((a, b) => b.generation - a.generation);
          const lkg: Slot | undefined = state.lastKnownGood ?? blessed[0]?.slot;
          const target = lkg ? otherSlot(lkg) : undefined;
          const manifestPath = `/${target}/${MANIFEST_NAME}`;
          return beginUpgrade(
            {
              ...ctx,
              onStep: async (step) => {
                o.report.say(`upgrade step ${step}${target ? ` (slot ${target})` : ""}`);
                // the manifest describes the slot's files: dropped before they change, written before an entry points at them
                if (target && step === "write-slot") await ctx.esp.remove(manifestPath);
                if (target && step === "write-entries") await ctx.esp.write(manifestPath, Buffer.from(JSON.stringify(payload.manifest, null, 1)));
              },
            },
            { ...toSlotPayload(payload, o.extraKernelArgs), tries: o.tries },
          );
        });
        o.report.say(`slot ${record.to} holds ${record.osVersion}; it boots next with ${o.tries} tries, slot ${record.from} stays the fallback`);
      },
    ],
  ]);
  return record!;
}

export interface StagedUpgrade {
  image: string;
  /** Folder with the verified payload, kept until the next boot. */
  payloadDir: string;
  tries: number;
  extraKernelArgs: string[];
  staged: string;
}

export async function recordStagedUpgrade(disk: SystemDisk, s: StagedUpgrade): Promise<void> {
  await disk.withMeta(async (m) => {
    m.set(MetaTag.StagedUpgradeImageRef, s.image);
    m.set(MetaTag.StagedUpgradeInstallOptions, JSON.stringify(s));
    await m.flush();
  });
}

/** Reads and clears the staged upgrade (cleared first: a staged upgrade that fails must not loop at every boot). */
export async function takeStagedUpgrade(disk: SystemDisk): Promise<StagedUpgrade | undefined> {
  return disk.withMeta(async (m) => {
    const image = m.getString(MetaTag.StagedUpgradeImageRef);
    const raw = m.getString(MetaTag.StagedUpgradeInstallOptions);
    if (image === undefined && raw === undefined) return undefined;
    m.delete(MetaTag.StagedUpgradeImageRef);
    m.delete(MetaTag.StagedUpgradeInstallOptions);
    await m.flush();
    try {
      const s = JSON.parse(raw ?? "") as StagedUpgrade;
      if (typeof s.payloadDir === "string") return { ...s, image: image ?? s.image };
    } catch {
      // fall through: options written by something else (e.g. Talos tooling) that we cannot act on
    }
    throw new Error(`staged upgrade of ${image ?? "?"} has unreadable options in META; dropped`);
  });
}
