/**
 * GRUB for BIOS firmware, installed the way grub-install's setup step does it, without running grub-install:
 *   - core.img (made at image build time by Debian's grub-mkimage, modules embedded, prefix "(,gpt1)/grub" so
 *     it reads grub.cfg and grubenv from the ESP of the disk the BIOS booted) goes raw into the BIOS boot
 *     partition;
 *   - boot.img (GRUB's 440-byte MBR code) goes into LBA 0, keeping the disk signature and the protective
 *     partition table that are already there.
 * Two patches make them find each other: boot.img learns the LBA of core.img's first sector, and the blocklist
 * at the end of that first sector (GRUB's diskboot) says where the rest of core.img is. Offsets are GRUB's
 * (include/grub/i386/pc/boot.h and setup.c); the bytes between them are GRUB's own code, copied unchanged.
 *
 * Written once at install: grub.cfg and grubenv on the ESP carry everything that changes on upgrades, so a
 * power cut during an upgrade can never leave a half-written core.img.
 */
import type { BlockIO } from "./blockio.js";

const SECTOR = 512;
/** boot.img: the BIOS parameter block a FAT boot sector would have; copied from the disk, as GRUB does. */
const BPB_START = 0x03;
const BPB_END = 0x5a;
/** boot.img: little-endian u64 LBA of core.img's first sector. */
const KERNEL_SECTOR = 0x5c;
/** boot.img: drive to load core.img from; 0xff means "the drive the BIOS booted" (passed in DL). */
const BOOT_DRIVE = 0x64;
/** boot.img: a 2-byte jump that skips GRUB's workaround for BIOSes passing a wrong DL; NOPs enable it for hard disks. */
const DRIVE_CHECK = 0x66;
/** From here to the 0x55AA signature the sector belongs to the partition table (disk signature + 4 entries). */
const NT_MAGIC = 0x1b8;
const SIGNATURE = 0x1fe;
/** diskboot (core.img sector 0): blocklist entries of { start u64, len u16, segment u16 }, growing downwards from the end. */
const BLOCKLIST_ENTRY = 12;
const FIRST_BLOCKLIST = SECTOR - BLOCKLIST_ENTRY;
/** Real-mode segment the rest of core.img is loaded to: GRUB's kernel segment 0x800 plus the first sector. */
const LOAD_SEGMENT = 0x820;

export interface BiosBootFiles {
  /** GRUB's boot.img (exactly 512 bytes). */
  boot: Buffer;
  /** core.img from grub-mkimage -O i386-pc. */
  core: Buffer;
}

function checkFiles(f: BiosBootFiles): void {
  if (f.boot.length !== SECTOR || f.boot.readUInt16LE(SIGNATURE) !== 0xaa55) {
    throw new Error(`GRUB boot.img must be one 512-byte sector ending in 55 AA; got ${f.boot.length} bytes`);
  }
  if (f.core.length < 2 * SECTOR) throw new Error(`GRUB core.img of ${f.core.length} bytes is too small to be one`);
}

/** core.img with its first sector's blocklist pointing at the following sectors, which follow it on disk. */
export function patchCoreImg(core: Buffer, firstLba: bigint): Buffer {
  const sectors = Math.ceil(core.length / SECTOR);
  const rest = sectors - 1;
  if (rest > 0xffff) throw new Error(`GRUB core.img of ${core.length} bytes does not fit one blocklist entry`);
  const out = Buffer.alloc(sectors * SECTOR);
  core.copy(out);
  // clear whatever list is there, then one entry for the contiguous rest and a zero terminator below it
  for (let off = FIRST_BLOCKLIST; off >= SECTOR / 2 && out.readUInt16LE(off + 8) !== 0; off -= BLOCKLIST_ENTRY) out.fill(0, off, off + BLOCKLIST_ENTRY);
  out.writeBigUInt64LE(firstLba + 1n, FIRST_BLOCKLIST);
  out.writeUInt16LE(rest, FIRST_BLOCKLIST + 8);
  out.writeUInt16LE(LOAD_SEGMENT, FIRST_BLOCKLIST + 10);
  out.fill(0, FIRST_BLOCKLIST - BLOCKLIST_ENTRY, FIRST_BLOCKLIST);
  return out;
}

/** LBA 0: GRUB's code, the disk's own BPB area and partition table, the jump to core.img at `coreLba`. */
export function patchBootSector(bootImg: Buffer, existing: Buffer, coreLba: bigint): Buffer {
  const out = Buffer.from(bootImg);
  existing.copy(out, BPB_START, BPB_START, BPB_END);
  existing.copy(out, NT_MAGIC, NT_MAGIC, SIGNATURE);
  out.writeBigUInt64LE(coreLba, KERNEL_SECTOR);
  out[BOOT_DRIVE] = 0xff;
  out[DRIVE_CHECK] = 0x90;
  out[DRIVE_CHECK + 1] = 0x90;
  out.writeUInt16LE(0xaa55, SIGNATURE);
  return out;
}

/** Reads back where LBA 0's GRUB code will load core.img from, or undefined when LBA 0 holds no GRUB boot code. */
export function bootSectorTarget(sector0: Buffer, bootImg: Buffer): bigint | undefined {
  const same = (a: number, b: number) => sector0.subarray(a, b).equals(bootImg.subarray(a, b));
  if (!same(0, BPB_START) || !same(BPB_END, KERNEL_SECTOR) || !same(DRIVE_CHECK + 2, NT_MAGIC)) return undefined;
  return sector0.readBigUInt64LE(KERNEL_SECTOR);
}

/**
 * Writes core.img into the BIOS boot partition (at `partOffset`, `partSize` bytes), then the MBR code.
 * The order matters: until LBA 0 is written the disk boots exactly as before.
 */
export async function installGrubBios(io: BlockIO, part: { offset: number; size: number }, files: BiosBootFiles, sectorSize = SECTOR): Promise<void> {
  checkFiles(files);
  if (sectorSize !== SECTOR) throw new Error(`BIOS boot needs 512-byte sectors; this disk has ${sectorSize}-byte sectors (boot it with UEFI)`);
  if (part.offset % SECTOR !== 0) throw new Error(`BIOS boot partition offset ${part.offset} is not sector aligned`);
  const lba = BigInt(part.offset / SECTOR);
  const core = patchCoreImg(files.core, lba);
  if (core.length > part.size) {
    throw new Error(`GRUB core.img needs ${core.length} bytes; the BIOS boot partition has ${part.size}`);
  }
  await io.write(part.offset, core);
  await io.sync();
  const mbr = patchBootSector(files.boot, await io.read(0, SECTOR), lba);
  await io.write(0, mbr);
  await io.sync();
}
