/** Where the GPT structures sit for a given disk size and sector size (UEFI spec §5.3). */
import { DEFAULT_ENTRY_COUNT, DEFAULT_ENTRY_SIZE, SUPPORTED_SECTOR_SIZES } from "./types.js";

export interface GptGeometry {
  sectorSize: number;
  totalSectors: number;
  entryArraySectors: number;
  primaryEntriesLba: number;
  firstUsableLba: number;
  lastUsableLba: number;
  backupEntriesLba: number;
  backupHeaderLba: number;
}

export function gptGeometry(
  diskSizeBytes: number,
  sectorSize: number,
  entryCount = DEFAULT_ENTRY_COUNT,
  entrySize = DEFAULT_ENTRY_SIZE,
): GptGeometry {
  if (!(SUPPORTED_SECTOR_SIZES as readonly number[]).includes(sectorSize)) {
    throw new Error(`unsupported sector size ${sectorSize} (supported: ${SUPPORTED_SECTOR_SIZES.join(", ")})`);
  }
  if (diskSizeBytes % sectorSize !== 0) {
    throw new Error(`disk size ${diskSizeBytes} is not a multiple of the ${sectorSize}-byte sector size`);
  }
  const totalSectors = diskSizeBytes / sectorSize;
  const entryArraySectors = Math.ceil((entryCount * entrySize) / sectorSize);
  const firstUsableLba = 2 + entryArraySectors;
  const backupHeaderLba = totalSectors - 1;
  const backupEntriesLba = backupHeaderLba - entryArraySectors;
  const lastUsableLba = backupEntriesLba - 1;
  if (lastUsableLba < firstUsableLba) throw new Error(`disk of ${diskSizeBytes} bytes is too small for a GPT`);
  return {
    sectorSize,
    totalSectors,
    entryArraySectors,
    primaryEntriesLba: 2,
    firstUsableLba,
    lastUsableLba,
    backupEntriesLba,
    backupHeaderLba,
  };
}
