/**
 * SMBIOS (DMI) tables as the kernel exports them (/sys/firmware/dmi/tables/{smbios_entry_point,DMI}), decoded
 * for what Talos publishes: BIOS version (type 0), system information (type 1), processors (type 4) and memory
 * devices (type 17). Layouts follow the DMTF SMBIOS reference specification (DSP0134).
 *
 * A host without SMBIOS (containers, some micro-VMs such as Firecracker) has no such files; the reader then
 * returns undefined and callers fall back to what the kernel tells otherwise.
 */
import { hostFiles, type Files } from "./files/index.js";
import { join } from "node:path";

export interface SmbiosSystem {
  manufacturer: string;
  productName: string;
  version: string;
  serialNumber: string;
  /** RFC 4122 text, or "" when the table has none (all zero or all 0xff bytes). */
  uuid: string;
  wakeUpType: string;
  skuNumber: string;
}

export interface SmbiosProcessor {
  socketDesignation: string;
  manufacturer: string;
  version: string;
  maxSpeedMhz: number;
  currentSpeedMhz: number;
  status: number;
  serialNumber: string;
  assetTag: string;
  partNumber: string;
  coreCount: number;
  coreEnabled: number;
  threadCount: number;
}

export interface SmbiosMemoryDevice {
  /** MiB; 0 when the slot is empty. */
  sizeMiB: number;
  deviceLocator: string;
  bankLocator: string;
  speed: number;
  manufacturer: string;
  serialNumber: string;
  assetTag: string;
  partNumber: string;
}

export interface Smbios {
  /** `major.minor` from the entry point. */
  version: string;
  biosVersion: string;
  system?: SmbiosSystem;
  processors: SmbiosProcessor[];
  memoryDevices: SmbiosMemoryDevice[];
}

interface Structure {
  type: number;
  data: Buffer;
  strings: string[];
}

const WAKE_UP: Record<number, string> = {
  0: "Reserved",
  1: "Other",
  2: "Unknown",
  3: "APM Timer",
  4: "Modem Ring",
  5: "LAN Remote",
  6: "Power Switch",
  7: "PCI PME#",
  8: "AC Power Restored",
};

/** Splits the structure table into structures (header, formatted area, string set), stopping at type 127. */
export function parseStructures(table: Buffer): Structure[] {
  const out: Structure[] = [];
  let off = 0;
  while (off + 4 <= table.length) {
    const type = table[off];
    const len = table[off + 1];
    if (len < 4 || off + len > table.length) break;
    const data = table.subarray(off, off + len);
    // The string set ends with two NULs (an empty set is just two NULs too).
    let end = off + len;
    while (end + 1 < table.length && !(table[end] === 0 && table[end + 1] === 0)) end++;
    const raw = table.subarray(off + len, end);
    const strings = raw.length === 0 ? [] : raw.toString("latin1").split("\0");
    out.push({ type, data, strings });
    if (type === 127) break;
    off = end + 2;
  }
  return out;
}

function str(s: Structure, at: number): string {
  const i = at < s.data.length ? s.data[at] : 0;
  return i > 0 && i <= s.strings.length ? s.strings[i - 1].trim() : "";
}

const u8 = (s: Structure, at: number) => (at < s.data.length ? s.data[at] : 0);
const u16 = (s: Structure, at: number) => (at + 2 <= s.data.length ? s.data.readUInt16LE(at) : 0);
const u32 = (s: Structure, at: number) => (at + 4 <= s.data.length ? s.data.readUInt32LE(at) : 0);

/** The UUID bytes as text; since SMBIOS 2.6 the first three fields are little-endian (as the kernel prints it). */
export function formatUuid(b: Buffer, littleEndianFields: boolean): string {
  if (b.length !== 16 || b.every((x) => x === 0) || b.every((x) => x === 0xff)) return "";
  const bytes = Buffer.from(b);
  if (littleEndianFields) {
    bytes.subarray(0, 4).reverse();
    bytes.subarray(4, 6).reverse();
    bytes.subarray(6, 8).reverse();
  }
  const h = bytes.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function memorySize(s: Structure): number {
  const size = u16(s, 12);
  if (size === 0 || size === 0xffff) return 0;
  if (size === 0x7fff) return u32(s, 28) & 0x7fffffff;
  // Bit 15 set: the size is in KiB.
  return size & 0x8000 ? Math.floor((size & 0x7fff) / 1024) : size;
}

/** Decodes an entry point (32-bit `_SM_` or 64-bit `_SM3_`) for the version, and the structure table. */
export function decodeSmbios(entryPoint: Buffer, table: Buffer): Smbios {
  let major = 0;
  let minor = 0;
  if (entryPoint.subarray(0, 5).toString("latin1") === "_SM3_") {
    major = entryPoint[7];
    minor = entryPoint[8];
  } else if (entryPoint.subarray(0, 4).toString("latin1") === "_SM_") {
    major = entryPoint[6];
    minor = entryPoint[7];
  }
  const le = major > 2 || (major === 2 && minor >= 6);
  const out: Smbios = { version: `${major}.${minor}`, biosVersion: "", processors: [], memoryDevices: [] };
  for (const s of parseStructures(table)) {
    switch (s.type) {
      case 0:
        out.biosVersion = str(s, 5);
        break;
      case 1:
        out.system = {
          manufacturer: str(s, 4),
          productName: str(s, 5),
          version: str(s, 6),
          serialNumber: str(s, 7),
          uuid: s.data.length >= 24 ? formatUuid(s.data.subarray(8, 24), le) : "",
          wakeUpType: s.data.length > 24 ? (WAKE_UP[u8(s, 24)] ?? "Unknown") : "",
          skuNumber: str(s, 25),
        };
        break;
      case 4:
        out.processors.push({
          socketDesignation: str(s, 4),
          manufacturer: str(s, 7),
          version: str(s, 16),
          maxSpeedMhz: u16(s, 20),
          currentSpeedMhz: u16(s, 22),
          status: u8(s, 24),
          serialNumber: str(s, 32),
          assetTag: str(s, 33),
          partNumber: str(s, 34),
          coreCount: u8(s, 35),
          coreEnabled: u8(s, 36),
          threadCount: u8(s, 37),
        });
        break;
      case 17:
        out.memoryDevices.push({
          sizeMiB: memorySize(s),
          deviceLocator: str(s, 16),
          bankLocator: str(s, 17),
          speed: u16(s, 21),
          manufacturer: str(s, 23),
          serialNumber: str(s, 24),
          assetTag: str(s, 25),
          partNumber: str(s, 26),
        });
        break;
    }
  }
  return out;
}

/** The host's SMBIOS, or undefined where the kernel exports none. `root` holds `sys/` (tests use a fake tree). */
export async function readSmbios(root = "/", files: Pick<Files, "readFile"> = hostFiles): Promise<Smbios | undefined> {
  const dir = join(root, "sys/firmware/dmi/tables");
  try {
    const [entry, table] = await Promise.all([files.readFile(join(dir, "smbios_entry_point")), files.readFile(join(dir, "DMI"))]);
    return decodeSmbios(entry, table);
  } catch {
    return undefined;
  }
}

/**
 * A stable 128-bit machine id where SMBIOS has no UUID: systemd's /etc/machine-id (32 hex digits), as a UUID.
 * Undefined when there is none.
 */
export async function readMachineIdUuid(root = "/", files: Pick<Files, "readFile"> = hostFiles): Promise<string | undefined> {
  const text = await files.readFile(join(root, "etc/machine-id"), "utf8").then(
    (t) => t.trim().toLowerCase(),
    () => "",
  );
  if (!/^[0-9a-f]{32}$/.test(text) || /^0+$/.test(text)) return undefined;
  return `${text.slice(0, 8)}-${text.slice(8, 12)}-${text.slice(12, 16)}-${text.slice(16, 20)}-${text.slice(20)}`;
}
