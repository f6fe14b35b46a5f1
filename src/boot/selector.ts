/**
 * machine.install.diskSelector / machine.install.disk → exactly one disk, or an error that lists every candidate
 * and why it was not chosen. Matching follows upstream InstallDiskSelector semantics:
 *   size: "[op] <bytes>" with op in ==, >=, <=, >, < (default ==), units as go-humanize ("4GB" = 4e9, "4GiB" = 2^32);
 *   uuid, wwid, model, serial, modalias, busPath: glob where only "*" is special (ryanuber/go-glob);
 *   type: nvme (transport nvme), sd (transport mmc), hdd (rotational), ssd (not rotational);
 *   always: transport must be non-empty (no dm/md/loop/zram), never read-only, never a CD-ROM.
 *   name: upstream's CEL matcher rejects it; we accept it as a glob on device/name or the kernel name.
 */
import type { DiskInfo } from "../host/disks.js";
import { prettySize } from "../host/disks.js";
import { failedPrecondition, invalidArgument } from "../machinery/errors.js";

export interface DiskSelector {
  size?: string;
  name?: string;
  model?: string;
  serial?: string;
  modalias?: string;
  uuid?: string;
  wwid?: string;
  type?: string;
  busPath?: string;
}

export type SizeOp = "==" | ">=" | "<=" | ">" | "<";

export interface SizeMatcher {
  op: SizeOp;
  bytes: number;
  text: string;
}

const UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  k: 1e3,
  kb: 1e3,
  ki: 2 ** 10,
  kib: 2 ** 10,
  m: 1e6,
  mb: 1e6,
  mi: 2 ** 20,
  mib: 2 ** 20,
  g: 1e9,
  gb: 1e9,
  gi: 2 ** 30,
  gib: 2 ** 30,
  t: 1e12,
  tb: 1e12,
  ti: 2 ** 40,
  tib: 2 ** 40,
  p: 1e15,
  pb: 1e15,
  pi: 2 ** 50,
  pib: 2 ** 50,
  e: 1e18,
  eb: 1e18,
  ei: 2 ** 60,
  eib: 2 ** 60,
};

/** go-humanize ParseBytes: leading number (digits, '.', ','), optional space, case-insensitive unit. */
export function parseBytes(text: string): number {
  const m = /^([\d.,]*)(.*)$/.exec(text)!;
  const num = m[1].replace(/,/g, "");
  if (!/^(\d+\.?\d*|\.\d+)$/.test(num)) throw invalidArgument(`invalid size ${JSON.stringify(text)}: expected a number followed by an optional unit (e.g. 100GB, 1.5TiB)`);
  const unit = m[2].trim().toLowerCase();
  const mult = UNITS[unit];
  if (mult === undefined) throw invalidArgument(`invalid size ${JSON.stringify(text)}: unknown unit ${JSON.stringify(unit)}`);
  const v = Number(num) * mult;
  if (v >= 2 ** 64) throw invalidArgument(`invalid size ${JSON.stringify(text)}: too large`);
  return Math.floor(v);
}

export function parseSizeMatcher(text: string): SizeMatcher {
  const t = text.trim();
  const m = /^(>=|<=|==|>|<)?\s*(.*)$/.exec(t)!;
  return { op: (m[1] as SizeOp | undefined) ?? "==", bytes: parseBytes(m[2].trim()), text: t };
}

function sizeMatches(size: number, m: SizeMatcher): boolean {
  switch (m.op) {
    case "==":
      return size === m.bytes;
    case ">=":
      return size >= m.bytes;
    case "<=":
      return size <= m.bytes;
    case ">":
      return size > m.bytes;
    case "<":
      return size < m.bytes;
  }
}

/** Only "*" is a wildcard; a pattern without "*" must equal the subject. */
export function globMatch(pattern: string, subject: string): boolean {
  if (pattern === "") return subject === "";
  if (pattern === "*") return true;
  const parts = pattern.split("*");
  if (parts.length === 1) return subject === pattern;
  const leading = pattern.startsWith("*");
  const trailing = pattern.endsWith("*");
  let rest = subject;
  for (let i = 0; i < parts.length - 1; i++) {
    const idx = rest.indexOf(parts[i]);
    if (i === 0 ? !leading && idx !== 0 : idx < 0) return false;
    rest = rest.slice(idx + parts[i].length);
  }
  return trailing || rest.endsWith(parts[parts.length - 1]);
}

const TYPES = ["ssd", "hdd", "nvme", "sd"] as const;

/** Throws InvalidArgument for selectors that can never be evaluated (bad size, unknown type). */
export function validateSelector(sel: DiskSelector): { size?: SizeMatcher } {
  if (sel.type !== undefined && sel.type !== "" && !(TYPES as readonly string[]).includes(sel.type)) {
    throw invalidArgument(`unsupported disk type ${JSON.stringify(sel.type)} in machine.install.diskSelector (one of ${TYPES.join(", ")})`);
  }
  return { size: sel.size ? parseSizeMatcher(sel.size) : undefined };
}

/** Every reason the disk does not satisfy the selector (empty array: it matches). */
export function mismatchReasons(d: DiskInfo, sel: DiskSelector): string[] {
  const { size } = validateSelector(sel);
  const why: string[] = [];
  if (d.readonly) why.push("read-only disks are never chosen");
  if (d.cdrom) why.push("CD-ROM drives are never chosen");
  if (d.transport === "") why.push("no transport (a virtual device such as dm, md, loop or zram)");
  if (size && !sizeMatches(d.size, size)) why.push(`size ${d.size} bytes is not ${size.op} ${size.bytes} bytes (${size.text})`);
  const globs: [keyof DiskSelector, string, string][] = [
    ["uuid", "uuid", d.uuid],
    ["wwid", "wwid", d.wwid],
    ["model", "model", d.model],
    ["serial", "serial", d.serial],
    ["modalias", "modalias", d.modalias],
    ["busPath", "bus path", d.busPath],
  ];
  for (const [key, label, value] of globs) {
    const pattern = sel[key];
    if (pattern && !globMatch(pattern, value)) why.push(`${label} ${JSON.stringify(value)} does not match ${JSON.stringify(pattern)}`);
  }
  if (sel.name && !globMatch(sel.name, d.name) && !globMatch(sel.name, d.id)) {
    why.push(`name ${JSON.stringify(d.name || d.id)} does not match ${JSON.stringify(sel.name)}`);
  }
  switch (sel.type) {
    case "nvme":
      if (d.transport !== "nvme") why.push(`type nvme needs transport nvme, disk has ${JSON.stringify(d.transport)}`);
      break;
    case "sd":
      if (d.transport !== "mmc") why.push(`type sd needs transport mmc, disk has ${JSON.stringify(d.transport)}`);
      break;
    case "hdd":
      if (!d.rotational) why.push("type hdd needs a rotational disk");
      break;
    case "ssd":
      if (d.rotational) why.push("type ssd needs a non-rotational disk");
      break;
  }
  return why;
}

export function describeDisk(d: DiskInfo): string {
  const flags = [d.readonly ? "read-only" : "", d.cdrom ? "cdrom" : "", d.file ? "image file" : ""].filter(Boolean);
  return (
    `${d.devPath}: size ${prettySize(d.size)} (${d.size} bytes), type ${d.type}, transport ${d.transport || "none"}, ` +
    `model ${JSON.stringify(d.model)}, serial ${JSON.stringify(d.serial)}, wwid ${JSON.stringify(d.wwid)}, uuid ${JSON.stringify(d.uuid)}, ` +
    `modalias ${JSON.stringify(d.modalias)}, bus path ${JSON.stringify(d.busPath)}, name ${JSON.stringify(d.name)}` +
    (flags.length ? `, ${flags.join(", ")}` : "")
  );
}

function listing(candidates: DiskInfo[], verdicts: string[][]): string {
  if (candidates.length === 0) return "\n  (no disks found)";
  return candidates.map((d, i) => `\n  - ${describeDisk(d)}\n      ${verdicts[i].length === 0 ? "MATCHES" : `not chosen: ${verdicts[i].join("; ")}`}`).join("");
}

function selectorText(sel: DiskSelector): string {
  return Object.entries(sel)
    .filter(([, v]) => v !== undefined && v !== "")
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join(", ");
}

export function selectInstallDisk(candidates: DiskInfo[], sel: DiskSelector): DiskInfo {
  validateSelector(sel);
  const verdicts = candidates.map((d) => mismatchReasons(d, sel));
  const matches = candidates.filter((_, i) => verdicts[i].length === 0);
  if (matches.length === 1) return matches[0];
  const head =
    matches.length === 0
      ? `no disk matches machine.install.diskSelector {${selectorText(sel)}}`
      : `${matches.length} disks match machine.install.diskSelector {${selectorText(sel)}}; make it specific enough to match exactly one`;
  throw failedPrecondition(`${head}. Candidates:${listing(candidates, verdicts)}`);
}

/** machine.install.disk (a device path, kernel name, /dev/disk/by-* link or image file) takes precedence over the selector. */
export function resolveInstallDisk(candidates: DiskInfo[], install: { disk?: string; diskSelector?: DiskSelector }): DiskInfo {
  if (install.disk) {
    const want = install.disk;
    const hit = candidates.find((d) => d.devPath === want || d.id === want || `/dev/${d.id}` === want || d.symlinks.includes(want));
    const verdicts = candidates.map((d) => (d === hit ? [] : [`is not ${want}`]));
    if (!hit) throw failedPrecondition(`machine.install.disk ${JSON.stringify(want)} is not among the disks found. Candidates:${listing(candidates, verdicts)}`);
    const bad = [hit.readonly ? "read-only" : "", hit.cdrom ? "a CD-ROM" : ""].filter(Boolean);
    if (bad.length) throw failedPrecondition(`machine.install.disk ${JSON.stringify(want)} is ${bad.join(" and ")} and cannot be installed to: ${describeDisk(hit)}`);
    return hit;
  }
  if (install.diskSelector && Object.values(install.diskSelector).some((v) => v !== undefined && v !== "")) {
    return selectInstallDisk(candidates, install.diskSelector);
  }
  throw failedPrecondition(`neither machine.install.disk nor machine.install.diskSelector is set. Candidates:${listing(candidates, candidates.map(() => ["no selector given"]))}`);
}
