/**
 * systemd-boot entries on the ESP for the two slots, with boot counting:
 *   stage:   write "<slot>+N.conf" (N tries) with a higher `version` than any other entry, so it sorts first;
 *   bless:   rename "<slot>+L-D.conf" → "<slot>.conf" once the OS is Ready (what systemd-bless-boot does);
 *   bad:     rename to "<slot>+0-D.conf" so sd-boot sorts it last and the other slot boots.
 * Every change is a single write-then-rename or rename, so a power cut leaves a consistent set of entries.
 */
import { copyInAtomic, writeAtomic, type EspFs } from "./esp.js";
import type { Arch, Slot } from "./layout-plan.js";
import {
  ENTRIES_DIR,
  entryFileName,
  formatEntry,
  formatLoaderConf,
  LOADER_CONF,
  parseEntry,
  parseEntryName,
  slotFromStem,
  slotStem,
  type Counter,
  type EntrySpec,
  type ParsedEntry,
} from "./sdboot-entry.js";

export * from "./sdboot-entry.js";
export * from "./sdboot-model.js";

export interface SlotEntry {
  slot: Slot;
  fileName: string;
  counter?: Counter;
  generation: number;
  osVersion?: string;
  parsed: ParsedEntry;
}

/** Entries that belong to slots A/B (others on the ESP are left alone). */
export async function listSlotEntries(esp: EspFs): Promise<SlotEntry[]> {
  const out: SlotEntry[] = [];
  for (const e of await esp.readAll(ENTRIES_DIR)) {
    const name = parseEntryName(e.name);
    const slot = name && slotFromStem(name.stem);
    if (!name || !slot) continue;
    const parsed = parseEntry(e.data.toString("utf8"));
    const generation = Number(parsed.meta.generation ?? parsed.version ?? 0);
    out.push({ slot, fileName: e.name, counter: name.counter, generation: Number.isFinite(generation) ? generation : 0, osVersion: parsed.meta.os, parsed });
  }
  return out;
}

export async function highestGeneration(esp: EspFs): Promise<number> {
  return (await listSlotEntries(esp)).reduce((m, e) => Math.max(m, e.generation), 0);
}

/** Writes the slot's entry (atomically) and then drops any older entry files of the same slot. */
export async function writeSlotEntry(esp: EspFs, spec: EntrySpec, tries?: number): Promise<string> {
  if (tries !== undefined && (!Number.isInteger(tries) || tries < 1)) throw new Error(`boot tries must be a positive integer, got ${tries}`);
  const fileName = entryFileName(slotStem(spec.slot), tries === undefined ? undefined : { left: tries, done: 0 });
  await esp.mkdir(ENTRIES_DIR);
  await writeAtomic(esp, `${ENTRIES_DIR}/${fileName}`, formatEntry(spec));
  for (const e of await listSlotEntries(esp)) {
    if (e.slot === spec.slot && e.fileName !== fileName) await esp.remove(`${ENTRIES_DIR}/${e.fileName}`);
  }
  return fileName;
}

export async function removeSlotEntries(esp: EspFs, slot: Slot): Promise<void> {
  for (const e of await listSlotEntries(esp)) {
    if (e.slot === slot) await esp.remove(`${ENTRIES_DIR}/${e.fileName}`);
  }
}

/** Strips the boot counter. Returns false when the slot had no counted entry (already blessed or absent). */
export async function blessSlot(esp: EspFs, slot: Slot): Promise<boolean> {
  const counted = (await listSlotEntries(esp)).filter((e) => e.slot === slot && e.counter);
  for (const e of counted) {
    await esp.rename(`${ENTRIES_DIR}/${e.fileName}`, `${ENTRIES_DIR}/${entryFileName(slotStem(slot))}`);
  }
  return counted.length > 0;
}

/** Marks the slot's entry as having no tries left, so sd-boot sorts it after every good entry. */
export async function markSlotBad(esp: EspFs, slot: Slot): Promise<boolean> {
  let changed = false;
  for (const e of await listSlotEntries(esp)) {
    if (e.slot !== slot || e.counter?.left === 0) continue;
    const done = e.counter ? e.counter.done : 0;
    await esp.rename(`${ENTRIES_DIR}/${e.fileName}`, `${ENTRIES_DIR}/${entryFileName(slotStem(slot), { left: 0, done: Math.max(done, 1) })}`);
    changed = true;
  }
  return changed;
}

export async function writeLoaderConf(esp: EspFs, timeoutSeconds = 3): Promise<void> {
  await esp.mkdir("/loader");
  await writeAtomic(esp, LOADER_CONF, formatLoaderConf(timeoutSeconds));
}

const EFI_NAMES: Record<Arch, { removable: string; sd: string }> = {
  amd64: { removable: "/EFI/BOOT/BOOTX64.EFI", sd: "/EFI/systemd/systemd-bootx64.efi" },
  arm64: { removable: "/EFI/BOOT/BOOTAA64.EFI", sd: "/EFI/systemd/systemd-bootaa64.efi" },
};

/** Installs the systemd-boot binary at the removable-media path, so firmware finds it without NVRAM entries. */
export async function installSystemdBoot(esp: EspFs, arch: Arch, efiBinaryPath: string): Promise<void> {
  const n = EFI_NAMES[arch];
  await esp.mkdir("/EFI/BOOT");
  await esp.mkdir("/EFI/systemd");
  await copyInAtomic(esp, efiBinaryPath, n.sd);
  await copyInAtomic(esp, efiBinaryPath, n.removable);
}
