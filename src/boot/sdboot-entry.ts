/**
 * systemd-boot Type #1 entry files: naming with boot counters ("a+3.conf" → "a+2-1.conf" → … "a+0-3.conf"),
 * and the text format. Pure functions only.
 */
import type { Slot } from "./layout-plan.js";

export const ENTRIES_DIR = "/loader/entries";
export const LOADER_CONF = "/loader/loader.conf";
export const SORT_KEY = "machined";

export interface Counter {
  left: number;
  done: number;
}

export interface EntryName {
  /** The file name without the counter and ".conf" ("a" for "a+2-1.conf"). */
  stem: string;
  counter?: Counter;
}

/**
 * Mirrors sd-boot: the counter is the text after the LAST "+" and must be digits, optionally "-" digits, directly
 * followed by ".conf". Anything else means "no counter" (the entry is never counted down).
 */
export function parseEntryName(fileName: string): EntryName | undefined {
  if (!fileName.toLowerCase().endsWith(".conf")) return undefined;
  const base = fileName.slice(0, -5);
  const plus = base.lastIndexOf("+");
  if (plus < 0) return { stem: base };
  const m = /^(\d+)(?:-(\d+))?$/.exec(base.slice(plus + 1));
  if (!m) return { stem: base };
  return { stem: base.slice(0, plus), counter: { left: Number(m[1]), done: m[2] === undefined ? 0 : Number(m[2]) } };
}

export function entryFileName(stem: string, counter?: Counter): string {
  if (!counter) return `${stem}.conf`;
  return counter.done > 0 ? `${stem}+${counter.left}-${counter.done}.conf` : `${stem}+${counter.left}.conf`;
}

/** The name sd-boot renames an entry to right before booting it. */
export function nextCounter(c: Counter): Counter {
  return { left: Math.max(c.left - 1, 0), done: c.done + 1 };
}

export function slotStem(slot: Slot): string {
  return slot.toLowerCase();
}

export function slotFromStem(stem: string): Slot | undefined {
  const s = stem.toUpperCase();
  return s === "A" || s === "B" ? s : undefined;
}

export interface EntrySpec {
  slot: Slot;
  /** Monotonic install generation; sd-boot sorts by it (newest first). */
  generation: number;
  osVersion: string;
  linux: string;
  initrd: string[];
  options: string;
}

export function formatEntry(e: EntrySpec): string {
  return [
    `# machined slot=${e.slot} generation=${e.generation} os=${e.osVersion}`,
    `title machined ${e.osVersion} (slot ${e.slot})`,
    `sort-key ${SORT_KEY}`,
    `version ${e.generation}`,
    `linux ${e.linux}`,
    ...e.initrd.map((i) => `initrd ${i}`),
    `options ${e.options}`,
    "",
  ].join("\n");
}

export interface ParsedEntry {
  title?: string;
  sortKey?: string;
  version?: string;
  machineId?: string;
  linux?: string;
  efi?: string;
  initrd: string[];
  options?: string;
  architecture?: string;
  /** Our own metadata from the leading comment, when present. */
  meta: Record<string, string>;
}

/** Parses the way sd-boot does: "key value" per line, '#' comments, repeated "options" concatenate. */
export function parseEntry(text: string): ParsedEntry {
  const out: ParsedEntry = { initrd: [], meta: {} };
  for (const raw of text.split(/\r?\n|\r/)) {
    const line = raw.trim();
    if (line.startsWith("# machined ")) {
      for (const kv of line.slice("# machined ".length).split(/\s+/)) {
        const eq = kv.indexOf("=");
        if (eq > 0) out.meta[kv.slice(0, eq)] = kv.slice(eq + 1);
      }
      continue;
    }
    if (line === "" || line.startsWith("#")) continue;
    const m = /^(\S+)[ \t]+(.*)$/.exec(line);
    if (!m) continue;
    let value = m[2].trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    switch (m[1]) {
      case "title":
        out.title = value;
        break;
      case "sort-key":
        out.sortKey = value;
        break;
      case "version":
        out.version = value;
        break;
      case "machine-id":
        out.machineId = value;
        break;
      case "linux":
        out.linux = value;
        break;
      case "efi":
        out.efi = value;
        break;
      case "initrd":
        out.initrd.push(value);
        break;
      case "options":
        out.options = out.options ? `${out.options} ${value}` : value;
        break;
      case "architecture":
        out.architecture = value;
        break;
    }
  }
  return out;
}

export function formatLoaderConf(timeoutSeconds = 3): string {
  // No "default": the newest entry that still has tries wins by sort order, which is what makes fallback automatic.
  return [`timeout ${timeoutSeconds}`, "editor no", "auto-entries no", "console-mode keep", ""].join("\n");
}
