/**
 * What is on a block device or partition, read from its first bytes (the superblocks blkid reads): the name
 * Talos's DiscoveredVolumes show (xfs, ext2/ext3/ext4, vfat, swap, luks, iso9660, squashfs, btrfs, talosmeta)
 * with the filesystem UUID, label, block size and size where the format records them. Read-only; anything
 * unrecognised is "" (nothing found).
 */
import { open, realpath } from "node:fs/promises";

export interface ProbeResult {
  name: string;
  uuid?: string;
  label?: string;
  blockSize?: number;
  filesystemBlockSize?: number;
  /** Bytes the filesystem says it spans. */
  probedSize?: number;
}

/** Enough for every superblock checked here (iso9660's volume descriptor sits at 32 KiB, btrfs's at 64 KiB). */
const READ = 72 * 1024;
const META_MAGIC = 0x5a4b3c2d;

const uuidText = (b: Buffer) => {
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
};
const cstr = (b: Buffer) => b.toString("latin1").replace(/\0.*$/s, "").trim();
const nonZero = (b: Buffer) => b.some((x) => x !== 0);

/** Decodes the head of a volume (`head` = its first bytes, at least 72 KiB when available). */
export function probeBytes(head: Buffer): ProbeResult {
  const at = (off: number, len: number) => (off + len <= head.length ? head.subarray(off, off + len) : Buffer.alloc(0));
  if (at(0, 4).toString("latin1") === "XFSB") {
    const bs = head.readUInt32BE(4);
    const blocks = head.readBigUInt64BE(8);
    return { name: "xfs", uuid: uuidText(at(32, 16)), label: cstr(at(108, 12)) || undefined, blockSize: bs, filesystemBlockSize: bs, probedSize: Number(blocks) * bs };
  }
  if (at(0, 6).equals(Buffer.from([0x4c, 0x55, 0x4b, 0x53, 0xba, 0xbe]))) {
    return { name: "luks", uuid: cstr(at(168, 40)) || undefined, label: cstr(at(24, 48)) || undefined };
  }
  if (at(0, 4).toString("latin1") === "hsqs") {
    return { name: "squashfs", blockSize: head.readUInt32LE(12), probedSize: Number(head.readBigUInt64LE(40)) };
  }
  if (head.length >= 4 && head.readUInt32BE(0) === META_MAGIC) return { name: "talosmeta" };
  if (head.length >= 1024 + 128 && head.readUInt16LE(1024 + 56) === 0xef53) {
    const sb = 1024;
    const bs = 1024 << head.readUInt32LE(sb + 24);
    const compat = head.readUInt32LE(sb + 92);
    const incompat = head.readUInt32LE(sb + 96);
    // extents, flex_bg or 64bit mean ext4; a journal alone means ext3.
    const name = incompat & (0x40 | 0x80 | 0x200) ? "ext4" : compat & 0x4 ? "ext3" : "ext2";
    const blocks = head.readUInt32LE(sb + 4) + (incompat & 0x80 ? head.readUInt32LE(sb + 0x150) * 2 ** 32 : 0);
    return { name, uuid: uuidText(at(sb + 104, 16)), label: cstr(at(sb + 120, 16)) || undefined, blockSize: bs, filesystemBlockSize: bs, probedSize: blocks * bs };
  }
  if (at(32769, 5).toString("latin1") === "CD001") {
    return { name: "iso9660", label: cstr(at(32808, 32)) || undefined, blockSize: 2048, probedSize: head.length >= 32852 ? head.readUInt32LE(32848) * 2048 : undefined };
  }
  if (at(65600, 8).toString("latin1") === "_BHRfS_M") {
    return { name: "btrfs", uuid: uuidText(at(65536 + 32, 16)), label: cstr(at(65536 + 299, 256)) || undefined };
  }
  if (at(4086, 10).toString("latin1") === "SWAPSPACE2") {
    const uuid = at(1024 + 12, 16);
    return { name: "swap", uuid: nonZero(uuid) ? uuidText(uuid) : undefined, label: cstr(at(1024 + 28, 16)) || undefined, blockSize: 4096, probedSize: (head.readUInt32LE(1024 + 4) + 1) * 4096 };
  }
  if (head.length >= 512 && head[510] === 0x55 && head[511] === 0xaa) {
    const fat32 = at(82, 8).toString("latin1") === "FAT32   ";
    const fat16 = /^FAT1[26] {3}$/.test(at(54, 8).toString("latin1"));
    if (fat32 || fat16) {
      const serial = head.readUInt32LE(fat32 ? 67 : 39);
      const hex = serial.toString(16).toUpperCase().padStart(8, "0");
      const label = cstr(at(fat32 ? 71 : 43, 11));
      const sectorSize = head.readUInt16LE(11);
      const sectors = head.readUInt16LE(19) || head.readUInt32LE(32);
      return {
        name: "vfat",
        uuid: `${hex.slice(0, 4)}-${hex.slice(4)}`,
        label: label && label !== "NO NAME" ? label : undefined,
        blockSize: sectorSize,
        filesystemBlockSize: sectorSize * head[13],
        probedSize: sectors * sectorSize,
      };
    }
  }
  return { name: "" };
}

/** Probes `size` bytes at `offset` of a device or image file. */
export async function probeVolume(path: string, offset = 0, size = Number.MAX_SAFE_INTEGER): Promise<ProbeResult> {
  const fh = await open(path, "r");
  try {
    const buf = Buffer.alloc(Math.min(READ, size));
    const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
    return probeBytes(buf.subarray(0, bytesRead));
  } finally {
    await fh.close();
  }
}

/** The sysfs device path of a kernel block device (`/sys/devices/...`), or "" when there is none. */
export async function sysfsDevicePath(name: string, sysRoot = "/sys"): Promise<string> {
  return realpath(`${sysRoot}/class/block/${name}`).catch(() => "");
}
