/**
 * Positional byte access to a disk image file or a block device: GPT, META and slot images all go through
 * the BlockIO interface, so tests can wrap it (to cut the power after N writes) or use MemoryBlockIO instead
 * of a real device.
 */
import { promises as fs, constants as fsc } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { readFile } from "node:fs/promises";

export interface BlockIO {
  readonly path: string;
  /** Size in bytes of the whole file/device. */
  size(): Promise<number>;
  /** Reads exactly `length` bytes; bytes past the end read as zeros (a sparse or short image). */
  read(offset: number, length: number): Promise<Buffer>;
  write(offset: number, data: Uint8Array): Promise<void>;
  /** fsync: the point after which a power cut cannot lose what was written. */
  sync(): Promise<void>;
  close(): Promise<void>;
}

class FileBlockIO implements BlockIO {
  constructor(
    readonly path: string,
    private readonly fh: FileHandle,
    private readonly blockDevice: boolean,
    private readonly deviceSize: number,
  ) {}

  async size(): Promise<number> {
    if (this.blockDevice) return this.deviceSize;
    return (await this.fh.stat()).size;
  }

  async read(offset: number, length: number): Promise<Buffer> {
    const buf = Buffer.alloc(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await this.fh.read(buf, done, length - done, offset + done);
      if (bytesRead === 0) break; // past EOF: the rest stays zero
      done += bytesRead;
    }
    return buf;
  }

  async write(offset: number, data: Uint8Array): Promise<void> {
    let done = 0;
    while (done < data.length) {
      const { bytesWritten } = await this.fh.write(data, done, data.length - done, offset + done);
      if (bytesWritten === 0) throw new Error(`${this.path}: short write at offset ${offset + done}`);
      done += bytesWritten;
    }
  }

  async sync(): Promise<void> {
    await this.fh.sync();
  }

  async close(): Promise<void> {
    await this.fh.close();
  }
}

/**
 * Size of a block device from sysfs: Node cannot issue BLKGETSIZE64, but /sys/dev/block/M:m/size always
 * counts 512-byte units whatever the logical sector size is.
 */
async function blockDeviceSize(rdev: number): Promise<number> {
  const major = Math.floor(rdev / 256) & 0xfff;
  const minor = (rdev & 0xff) | ((Math.floor(rdev / 4096) & 0xfff00) >>> 0);
  const text = await readFile(`/sys/dev/block/${major}:${minor}/size`, "utf8");
  return Number(text.trim()) * 512;
}

export async function openBlockIO(path: string, opts: { write?: boolean; create?: boolean } = {}): Promise<BlockIO> {
  let flags = opts.write ? fsc.O_RDWR : fsc.O_RDONLY;
  if (opts.create) flags |= fsc.O_CREAT;
  const fh = await fs.open(path, flags, 0o644);
  try {
    const st = await fh.stat();
    const isBlock = st.isBlockDevice();
    if (!isBlock && !st.isFile()) throw new Error(`${path} is neither a regular file nor a block device`);
    return new FileBlockIO(path, fh, isBlock, isBlock ? await blockDeviceSize(st.rdev) : 0);
  } catch (err) {
    await fh.close();
    throw err;
  }
}

/** Convenience for code that needs one read/write and must always close. */
export async function withBlockIO<T>(
  path: string,
  opts: { write?: boolean; create?: boolean },
  fn: (io: BlockIO) => Promise<T>,
): Promise<T> {
  const io = await openBlockIO(path, opts);
  try {
    return await fn(io);
  } finally {
    await io.close();
  }
}

/** A disk held in memory (a test stand-in for an image file); it grows on writes past its end unless fixed. */
export class MemoryBlockIO implements BlockIO {
  private data: Buffer;
  syncs = 0;
  closed = false;

  constructor(
    size: number,
    readonly path = "memory",
    private readonly fixedSize = true,
  ) {
    this.data = Buffer.alloc(size);
  }

  async size(): Promise<number> {
    return this.data.length;
  }

  async read(offset: number, length: number): Promise<Buffer> {
    const out = Buffer.alloc(length);
    if (offset < this.data.length) this.data.copy(out, 0, offset, Math.min(this.data.length, offset + length));
    return out;
  }

  async write(offset: number, data: Uint8Array): Promise<void> {
    const end = offset + data.length;
    if (end > this.data.length) {
      if (this.fixedSize) throw new Error(`${this.path}: write [${offset}, ${end}) past the end of the ${this.data.length}-byte disk`);
      const grown = Buffer.alloc(end);
      this.data.copy(grown);
      this.data = grown;
    }
    this.data.set(data, offset);
  }

  async sync(): Promise<void> {
    this.syncs++;
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  /** A copy of the whole disk, for assertions. */
  bytes(): Buffer {
    return Buffer.from(this.data);
  }
}
