/** In-memory GPT model shared by the encoder and the decoder. LBAs are plain numbers (safe up to 8 PiB). */

export interface GptPartition {
  /** 1-based position in the partition entry array (what Linux calls sda<N>). */
  index: number;
  typeGuid: string;
  uniqueGuid: string;
  firstLba: number;
  /** Inclusive, as on disk. */
  lastLba: number;
  attributes: bigint;
  /** GPT partition name (UTF-16LE on disk, at most 36 code units). Talos uses it as the label. */
  name: string;
}

export interface GptTable {
  sectorSize: number;
  /** Total sectors of the disk; the backup header lives in the last one. */
  totalSectors: number;
  diskGuid: string;
  firstUsableLba: number;
  lastUsableLba: number;
  entryCount: number;
  entrySize: number;
  partitions: GptPartition[];
}

export class GptError extends Error {
  constructor(
    readonly path: string,
    readonly problems: string[],
  ) {
    super(`${path}: invalid GPT: ${problems.join("; ")}`);
    this.name = "GptError";
  }
}

export const SUPPORTED_SECTOR_SIZES = [512, 4096] as const;
export const DEFAULT_ENTRY_COUNT = 128;
export const DEFAULT_ENTRY_SIZE = 128;
export const HEADER_SIZE = 92;
export const GPT_SIGNATURE = "EFI PART";
export const GPT_REVISION = 0x00010000;
export const NAME_MAX_UNITS = 36;
