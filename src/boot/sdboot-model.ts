/**
 * A model of systemd-boot's (v252+) entry selection, used by tests to predict what the firmware will boot from
 * the files actually on the ESP:
 *   1. entries whose `linux`/`efi` file is missing are dropped (not counted down);
 *   2. sort: entries with 0 tries left go last; entries with sort-key before those without; then sort-key,
 *      machine-id, version (newest first), file name (newest first), more tries left, fewer tries done;
 *   3. without a default pattern or EFI variable, the first entry is the default;
 *   4. before starting a counted entry sd-boot renames it +LEFT-DONE → +(LEFT-1)-(DONE+1) (never below 0).
 * We never set `default` in loader.conf nor the LoaderEntryDefault variable, so 3 is the whole rule.
 */
import type { EspFs } from "./esp.js";
import type { Slot } from "./layout-plan.js";
import { compareVersions } from "./version-compare.js";
import { ENTRIES_DIR, entryFileName, nextCounter, parseEntry, parseEntryName, slotFromStem } from "./sdboot-entry.js";

export interface ModelEntry {
  fileName: string;
  /** sd-boot's id: the file name, lower-cased. */
  id: string;
  sortKey?: string;
  machineId?: string;
  version?: string;
  /** -1 when the name carries no counter. */
  triesLeft: number;
  triesDone: number;
  loader: string;
  slot?: Slot;
  generation?: number;
}

const strcmpOpt = (a?: string, b?: string) => {
  if (a === b) return 0;
  if (a === undefined) return -1;
  if (b === undefined) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
};

export function compareEntries(a: ModelEntry, b: ModelEntry): number {
  let r = Number(a.triesLeft === 0) - Number(b.triesLeft === 0);
  if (r !== 0) return r;
  r = Number(a.sortKey === undefined) - Number(b.sortKey === undefined);
  if (r !== 0) return r;
  if (a.sortKey !== undefined && b.sortKey !== undefined) {
    r = strcmpOpt(a.sortKey, b.sortKey);
    if (r !== 0) return r;
    r = strcmpOpt(a.machineId, b.machineId);
    if (r !== 0) return r;
    r = -compareVersions(a.version, b.version);
    if (r !== 0) return r;
  }
  r = -compareVersions(a.id, b.id);
  if (r !== 0) return r;
  if (a.triesLeft < 0 || b.triesLeft < 0) return 0;
  r = -(a.triesLeft - b.triesLeft);
  if (r !== 0) return Math.sign(r);
  return Math.sign(a.triesDone - b.triesDone);
}

export function sortEntries(entries: readonly ModelEntry[]): ModelEntry[] {
  return [...entries].sort(compareEntries);
}

export interface EntryFile {
  fileName: string;
  content: string;
}

/** Turns entry files into model entries, dropping the ones sd-boot would not list. */
export function modelEntries(files: readonly EntryFile[], loaderExists: (path: string) => boolean, efiArch = "x64"): ModelEntry[] {
  const out: ModelEntry[] = [];
  for (const f of files) {
    const name = parseEntryName(f.fileName);
    if (!name || f.fileName.startsWith("auto-") || f.fileName.startsWith(".")) continue;
    const p = parseEntry(f.content);
    if (p.architecture !== undefined && p.architecture !== efiArch) continue;
    const loader = p.linux ?? p.efi;
    if (!loader || !loaderExists(loader)) continue;
    const generation = p.meta.generation !== undefined ? Number(p.meta.generation) : undefined;
    out.push({
      fileName: f.fileName,
      id: f.fileName.toLowerCase(),
      sortKey: p.sortKey,
      machineId: p.machineId,
      version: p.version,
      triesLeft: name.counter ? name.counter.left : -1,
      triesDone: name.counter ? name.counter.done : -1,
      loader,
      slot: (p.meta.slot as Slot | undefined) ?? slotFromStem(name.stem),
      generation,
    });
  }
  return out;
}

export interface BootDecision {
  entry: ModelEntry;
  /** The name sd-boot gives the file before starting it; undefined for entries without a counter. */
  renameTo?: string;
  /** The full menu order, default first. */
  order: ModelEntry[];
}

export function decideBoot(entries: readonly ModelEntry[]): BootDecision | undefined {
  const order = sortEntries(entries);
  const entry = order[0];
  if (!entry) return undefined;
  if (entry.triesLeft < 0) return { entry, order };
  const stem = parseEntryName(entry.fileName)!.stem;
  return { entry, order, renameTo: entryFileName(stem, nextCounter({ left: entry.triesLeft, done: entry.triesDone })) };
}

/** Reads the entries as they are on the ESP right now. */
export async function readEspEntries(esp: EspFs): Promise<{ files: EntryFile[]; model: ModelEntry[] }> {
  const files: EntryFile[] = (await esp.readAll(ENTRIES_DIR))
    .filter((e) => e.name.toLowerCase().endsWith(".conf"))
    .map((e) => ({ fileName: e.name, content: e.data.toString("utf8") }));
  const loaders = new Map<string, boolean>();
  for (const f of files) {
    const p = parseEntry(f.content);
    const l = p.linux ?? p.efi;
    if (l && !loaders.has(l)) loaders.set(l, await esp.exists(l));
  }
  return { files, model: modelEntries(files, (p) => loaders.get(p) === true) };
}

/** Does what sd-boot does at power-on: pick the default and spend one try (renaming the file on the ESP). */
export async function simulateSdBoot(esp: EspFs): Promise<BootDecision | undefined> {
  const { model } = await readEspEntries(esp);
  const d = decideBoot(model);
  if (d?.renameTo && d.renameTo !== d.entry.fileName) {
    await esp.rename(`${ENTRIES_DIR}/${d.entry.fileName}`, `${ENTRIES_DIR}/${d.renameTo}`);
  }
  return d;
}
