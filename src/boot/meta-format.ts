/**
 * Talos-compatible "ADV" block codec (the format go-adv's talos package reads): one 256 KiB block, big-endian,
 *   magic1 0x5a4b3c2d | (tag u32, size u32, value)… | zero padding | sha256 (32 bytes) at −36 | magic2 at −4
 * where the SHA-256 covers the whole block with the checksum field zeroed. Tag 0 ends the record list.
 */
import { createHash } from "node:crypto";

export const ADV_LENGTH = 256 * 1024;
/** Room for records: the block minus magic1 (4), checksum (32) and magic2 (4). */
export const ADV_DATA_LENGTH = ADV_LENGTH - 40;
export const ADV_MAGIC1 = 0x5a4b3c2d;
export const ADV_MAGIC2 = 0xa5b4c3d2;
/** Both copies; what Talos calls talos.Size. */
export const ADV_TOTAL = 2 * ADV_LENGTH;

/** Bytes the records occupy once serialised. */
export function advUsage(tags: ReadonlyMap<number, Uint8Array>): number {
  let n = 0;
  for (const v of tags.values()) n += 8 + v.length;
  return n;
}

export function encodeAdv(tags: ReadonlyMap<number, Uint8Array>): Buffer {
  const used = advUsage(tags);
  if (used > ADV_DATA_LENGTH) throw new Error(`META is full: ${used} bytes of records exceed the ${ADV_DATA_LENGTH}-byte capacity`);
  const buf = Buffer.alloc(ADV_LENGTH);
  buf.writeUInt32BE(ADV_MAGIC1, 0);
  let off = 4;
  // sorted so the same contents always produce the same bytes (Go's map order is random; ours needn't be)
  for (const tag of [...tags.keys()].sort((a, b) => a - b)) {
    const value = tags.get(tag)!;
    buf.writeUInt32BE(tag, off);
    buf.writeUInt32BE(value.length, off + 4);
    Buffer.from(value.buffer, value.byteOffset, value.length).copy(buf, off + 8);
    off += 8 + value.length;
  }
  buf.writeUInt32BE(ADV_MAGIC2, ADV_LENGTH - 4);
  createHash("sha256").update(buf).digest().copy(buf, ADV_LENGTH - 36);
  return buf;
}

export type AdvDecode = { ok: true; tags: Map<number, Buffer> } | { ok: false; reason: string };

export function decodeAdv(block: Buffer): AdvDecode {
  if (block.length !== ADV_LENGTH) return { ok: false, reason: `block is ${block.length} bytes, expected ${ADV_LENGTH}` };
  const m1 = block.readUInt32BE(0);
  if (m1 !== ADV_MAGIC1) return { ok: false, reason: `bad magic1 0x${m1.toString(16)} (expected 0x${ADV_MAGIC1.toString(16)})` };
  const m2 = block.readUInt32BE(ADV_LENGTH - 4);
  if (m2 !== ADV_MAGIC2) return { ok: false, reason: `bad magic2 0x${m2.toString(16)} (expected 0x${ADV_MAGIC2.toString(16)})` };
  const stored = Buffer.from(block.subarray(ADV_LENGTH - 36, ADV_LENGTH - 4));
  const copy = Buffer.from(block);
  copy.fill(0, ADV_LENGTH - 36, ADV_LENGTH - 4);
  const actual = createHash("sha256").update(copy).digest();
  if (!stored.equals(actual)) return { ok: false, reason: "SHA-256 checksum mismatch" };

  const tags = new Map<number, Buffer>();
  let data = block.subarray(4, ADV_LENGTH - 36);
  while (data.length >= 8) {
    const tag = data.readUInt32BE(0);
    if (tag === 0) break;
    const size = data.readUInt32BE(4);
    if (size + 8 > data.length) return { ok: false, reason: `record for tag ${tag} (size ${size}) runs past the end of the block` };
    tags.set(tag, Buffer.from(data.subarray(8, 8 + size)));
    data = data.subarray(8 + size);
  }
  return { ok: true, tags };
}
