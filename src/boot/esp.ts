/**
 * The EFI system partition as a tiny file API. Two implementations: mtools on an image/device region (install,
 * tests, no mounts needed) and a plain directory (an ESP mounted by the running node). Bootloader code only sees
 * this interface, so the same code writes entries at install time and blesses them at run time.
 */

export interface EspEntry {
  name: string;
  dir: boolean;
}

export interface EspFs {
  /** Human-readable location for error messages. */
  readonly where: string;
  /** Entries of a directory; empty when the directory does not exist. */
  list(dir: string): Promise<EspEntry[]>;
  /** File contents, or undefined when the file does not exist. */
  read(path: string): Promise<Buffer | undefined>;
  /** Every regular file directly in a directory with its contents (one round trip; empty when missing). */
  readAll(dir: string): Promise<{ name: string; data: Buffer }[]>;
  /** Creates or replaces a file in place (NOT atomic; use writeAtomic for anything a bootloader reads). */
  write(path: string, data: Uint8Array): Promise<void>;
  /** Copies a host file into the ESP (in place, not atomic). */
  copyIn(hostPath: string, path: string): Promise<void>;
  /** Renames, replacing an existing target. */
  rename(from: string, to: string): Promise<void>;
  /** Deletes a file; a missing file is not an error. */
  remove(path: string): Promise<void>;
  /** Creates a directory and its parents; existing ones are fine. */
  mkdir(path: string): Promise<void>;
  exists(path: string): Promise<boolean>;
}

/** Suffix for in-flight files: sd-boot only reads "*.conf" and GRUB only our fixed names, so both ignore these. */
export const TMP_SUFFIX = ".tmp";

/**
 * Write-then-rename. On FAT a rename is a single directory-entry update, so a reader (sd-boot, GRUB, us after
 * a reboot) sees either the complete old file or the complete new one; a cut mid-write leaves only a *.tmp.
 */
export async function writeAtomic(esp: EspFs, path: string, data: Uint8Array | string): Promise<void> {
  const tmp = path + TMP_SUFFIX;
  await esp.write(tmp, typeof data === "string" ? Buffer.from(data, "utf8") : data);
  await esp.rename(tmp, path);
}

export async function copyInAtomic(esp: EspFs, hostPath: string, path: string): Promise<void> {
  const tmp = path + TMP_SUFFIX;
  await esp.copyIn(hostPath, tmp);
  await esp.rename(tmp, path);
}

export function joinEsp(...parts: string[]): string {
  const joined = parts.join("/").replace(/\/+/g, "/");
  return joined.startsWith("/") ? joined : `/${joined}`;
}
