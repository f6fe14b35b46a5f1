/**
 * Positional byte access to a disk image file or a block device (src/host/block/io.ts), plus RegionIO: a window
 * onto one partition, so GPT, META and slot code address partitions by their own offsets.
 */
import type { BlockIO } from "../host/block/io.js";

export { openBlockIO, withBlockIO, type BlockIO } from "../host/block/io.js";

/** A window onto part of another BlockIO (one partition); offsets are relative to the window start. */
export class RegionIO implements BlockIO {
  constructor(
    private readonly inner: BlockIO,
    readonly start: number,
    readonly length: number,
  ) {}

  get path(): string {
    return `${this.inner.path}@${this.start}`;
  }

  async size(): Promise<number> {
    return this.length;
  }

  private check(offset: number, length: number): void {
    if (offset < 0 || offset + length > this.length) {
      throw new RangeError(`${this.path}: access [${offset}, ${offset + length}) is outside the ${this.length}-byte region`);
    }
  }

  read(offset: number, length: number): Promise<Buffer> {
    this.check(offset, length);
    return this.inner.read(this.start + offset, length);
  }

  write(offset: number, data: Uint8Array): Promise<void> {
    this.check(offset, data.length);
    return this.inner.write(this.start + offset, data);
  }

  sync(): Promise<void> {
    return this.inner.sync();
  }

  async close(): Promise<void> {
    // the region does not own the inner handle
  }
}
