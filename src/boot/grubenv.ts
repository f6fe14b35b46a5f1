/**
 * GRUB's environment block (grubenv) and the grub.cfg script that turns it into a try counter for BIOS boots.
 * grubenv is exactly 1024 bytes: "# GRUB Environment Block\n", "name=value\n" lines, '#' padding. GRUB's
 * save_env rewrites it in place (it never allocates), which is why it must live on FAT/ext, never XFS.
 *
 * Variables: next_slot (slot on trial), boot_tries (attempts left for it), last_good (slot to boot otherwise).
 */
import { writeAtomic, type EspFs } from "./esp.js";
import type { Slot } from "./layout-plan.js";

export const GRUBENV_SIZE = 1024;
export const GRUBENV_HEADER = "# GRUB Environment Block\n";
export const GRUB_DIR = "/grub";
export const GRUBENV_PATH = "/grub/grubenv";
export const GRUBCFG_PATH = "/grub/grub.cfg";
/** grub.cfg can only decrement through a chain of string comparisons, so the counter is a single digit. */
export const MAX_GRUB_TRIES = 9;

export type GrubEnv = Record<string, string>;

function escape(v: string): string {
  // GRUB prefixes backslash and newline with a backslash
  return v.replace(/[\\\n]/g, (c) => `\\${c}`);
}

export function encodeGrubEnv(env: GrubEnv): Buffer {
  let text = GRUBENV_HEADER;
  for (const [k, v] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new Error(`invalid grubenv variable name ${JSON.stringify(k)}`);
    text += `${k}=${escape(v)}\n`;
  }
  const body = Buffer.from(text, "utf8");
  if (body.length > GRUBENV_SIZE) throw new Error(`grubenv content of ${body.length} bytes exceeds ${GRUBENV_SIZE}`);
  const out = Buffer.alloc(GRUBENV_SIZE, "#");
  body.copy(out);
  return out;
}

export function parseGrubEnv(buf: Buffer): GrubEnv {
  if (buf.length !== GRUBENV_SIZE) throw new Error(`grubenv is ${buf.length} bytes, expected ${GRUBENV_SIZE}`);
  const text = buf.toString("utf8");
  if (!text.startsWith(GRUBENV_HEADER)) throw new Error("grubenv lacks the '# GRUB Environment Block' header");
  const env: GrubEnv = {};
  let i = GRUBENV_HEADER.length;
  while (i < text.length) {
    if (text[i] === "#") {
      // a comment line (Debian's grub-editenv adds one) or the padding, which runs to the end without a newline
      const nl = text.indexOf("\n", i);
      if (nl < 0) break;
      i = nl + 1;
      continue;
    }
    let line = "";
    while (i < text.length && text[i] !== "\n") {
      if (text[i] === "\\" && i + 1 < text.length) {
        line += text[i + 1];
        i += 2;
        continue;
      }
      line += text[i++];
    }
    i++; // newline
    const eq = line.indexOf("=");
    if (eq > 0) env[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return env;
}

export interface BootVars {
  nextSlot?: Slot;
  bootTries: number;
  lastGood?: Slot;
}

const asSlot = (v?: string): Slot | undefined => (v === "A" || v === "B" ? v : undefined);

export function bootVarsFromEnv(env: GrubEnv): BootVars {
  const tries = /^\d$/.test(env.boot_tries ?? "") ? Number(env.boot_tries) : 0;
  return { nextSlot: asSlot(env.next_slot), bootTries: tries, lastGood: asSlot(env.last_good) };
}

export function envFromBootVars(v: BootVars, base: GrubEnv = {}): GrubEnv {
  if (!Number.isInteger(v.bootTries) || v.bootTries < 0 || v.bootTries > MAX_GRUB_TRIES) {
    throw new Error(`boot_tries must be 0..${MAX_GRUB_TRIES}, got ${v.bootTries}`);
  }
  return { ...base, next_slot: v.nextSlot ?? "", boot_tries: String(v.bootTries), last_good: v.lastGood ?? "" };
}

export async function readGrubEnv(esp: EspFs): Promise<GrubEnv | undefined> {
  const data = await esp.read(GRUBENV_PATH);
  if (!data) return undefined;
  try {
    return parseGrubEnv(data);
  } catch {
    return undefined; // GRUB's load_env fails the same way: no variables
  }
}

export async function hasGrub(esp: EspFs): Promise<boolean> {
  return (await esp.exists(GRUBENV_PATH)) || (await esp.exists(GRUBCFG_PATH));
}

/** Replaces our three variables, keeping any others (an operator's or grub-reboot's). */
export async function writeBootVars(esp: EspFs, vars: BootVars): Promise<void> {
  const base = (await readGrubEnv(esp)) ?? {};
  await esp.mkdir(GRUB_DIR);
  await writeAtomic(esp, GRUBENV_PATH, encodeGrubEnv(envFromBootVars(vars, base)));
}
