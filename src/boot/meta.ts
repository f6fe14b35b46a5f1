/**
 * The META partition: a small key/value store that survives reinstalls of the OS image and is readable before
 * any filesystem is mounted. Two identical ADV copies (offset 0 and 256 KiB); each is written and fsynced
 * before the next, so a power cut tears at most one copy and the other still holds a complete state.
 * (Talos also mirrors a legacy syslinux ADV at the partition end; nothing of ours reads it, so we do not.)
 */
import { openBlockIO, type BlockIO } from "./blockio.js";
import { ADV_LENGTH, ADV_TOTAL, advUsage, ADV_DATA_LENGTH, decodeAdv, encodeAdv } from "./meta-format.js";
import { assertValidTag } from "./meta-tags.js";

export { MetaTag } from "./meta-tags.js";
export const META_PARTITION_SIZE = 1024 * 1024;

/** Where the values came from when the store was opened. */
export type MetaSource = "primary" | "backup" | "empty" | "corrupt";

export class Meta {
  private constructor(
    private readonly io: BlockIO,
    private readonly ownsIO: boolean,
    readonly offset: number,
    readonly size: number,
    private tags: Map<number, Buffer>,
    /** Which copy supplied the values. "backup" means the primary was bad and the next flush repairs it. */
    readonly source: MetaSource,
    /** Why a copy was rejected (empty when both were fine). */
    readonly problems: string[],
  ) {}

  /** Opens the META region of an image file or block device. */
  static async open(path: string, offset = 0, size = META_PARTITION_SIZE): Promise<Meta> {
    const io = await openBlockIO(path, { write: true });
    try {
      return await Meta.load(io, offset, size, true);
    } catch (err) {
      await io.close();
      throw err;
    }
  }

  /** Same as open() over an existing BlockIO (tests wrap it to simulate power cuts). */
  static fromIO(io: BlockIO, offset = 0, size = META_PARTITION_SIZE): Promise<Meta> {
    return Meta.load(io, offset, size, false);
  }

  private static async load(io: BlockIO, offset: number, size: number, owns: boolean): Promise<Meta> {
    if (size < ADV_TOTAL) throw new Error(`META region of ${size} bytes is smaller than the ${ADV_TOTAL} bytes two ADV copies need`);
    const first = await io.read(offset, ADV_LENGTH);
    const a = decodeAdv(first);
    if (a.ok) return new Meta(io, owns, offset, size, a.tags, "primary", []);
    const second = await io.read(offset + ADV_LENGTH, ADV_LENGTH);
    const b = decodeAdv(second);
    const problems = [`primary copy at ${io.path}+${offset}: ${a.reason}`];
    if (b.ok) return new Meta(io, owns, offset, size, b.tags, "backup", problems);
    problems.push(`backup copy at ${io.path}+${offset + ADV_LENGTH}: ${b.reason}`);
    // an all-zero region is a freshly created partition, not damage
    const blank = isZero(first) && isZero(second);
    return new Meta(io, owns, offset, size, new Map(), blank ? "empty" : "corrupt", blank ? [] : problems);
  }

  get(tag: number): Buffer | undefined {
    assertValidTag(tag);
    const v = this.tags.get(tag);
    return v ? Buffer.from(v) : undefined;
  }

  getString(tag: number): string | undefined {
    return this.get(tag)?.toString("utf8");
  }

  /** Changes memory only; flush() makes it durable. Throws when the block would overflow. */
  set(tag: number, value: string | Uint8Array): void {
    assertValidTag(tag);
    const buf = typeof value === "string" ? Buffer.from(value, "utf8") : Buffer.from(value);
    const next = new Map(this.tags);
    next.set(tag, buf);
    const used = advUsage(next);
    if (used > ADV_DATA_LENGTH) throw new Error(`META tag ${tag}: value of ${buf.length} bytes does not fit (${used} > ${ADV_DATA_LENGTH} bytes)`);
    this.tags = next;
  }

  delete(tag: number): boolean {
    assertValidTag(tag);
    return this.tags.delete(tag);
  }

  list(): { tag: number; value: Buffer }[] {
    return [...this.tags.keys()].sort((x, y) => x - y).map((tag) => ({ tag, value: Buffer.from(this.tags.get(tag)!) }));
  }

  /** Writes copy 1, fsync, copy 2, fsync. Also repairs a copy found damaged at open. */
  async flush(): Promise<void> {
    const block = encodeAdv(this.tags);
    await this.io.write(this.offset, block);
    await this.io.sync();
    await this.io.write(this.offset + ADV_LENGTH, block);
    await this.io.sync();
  }

  async close(): Promise<void> {
    if (this.ownsIO) await this.io.close();
  }
}

const ZERO_BLOCK = Buffer.alloc(ADV_LENGTH);

function isZero(buf: Buffer): boolean {
  return buf.length === ZERO_BLOCK.length && buf.equals(ZERO_BLOCK); // memcmp; this runs on every boot
}
