/**
 * The bytes a forwarded reply is made of, worked on without knowing any reply type (upstream's AppendInfo and
 * BuildError). Every Talos reply is `repeated X messages = 1` with `common.Metadata metadata = 1` in each X, and
 * every streamed message has `metadata = 1` itself. Protobuf merges repeated occurrences of a message field, so
 * appending an encoded `metadata` field to an entry sets it (a metadata the backend already wrote is merged,
 * ours coming last wins) and concatenating replies concatenates their entries.
 */
import { Code } from "../../machinery/errors.js";

export interface NodeStatus {
  code: number;
  details: string;
  /** google.rpc.Status as the backend encoded it (its grpc-status-details-bin), kept verbatim when present. */
  statusBin?: Buffer;
}

/** Go's status error text, which upstream puts in metadata.error: `rpc error: code = Unavailable desc = ...`. */
export function goStatusText(s: { code: number; details: string }): string {
  return `rpc error: code = ${Code[s.code] ?? `Code(${s.code})`} desc = ${s.details}`;
}

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

/** One length-delimited field. */
function lenField(field: number, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from([(field << 3) | 2, ...varint(body.length)]), body]);
}

function stringField(field: number, s: string): Buffer {
  return s === "" ? Buffer.alloc(0) : lenField(field, Buffer.from(s, "utf8"));
}

/** google.rpc.Status{code = 1, message = 2}. A negative int32 would take 10 bytes; codes are 0..16. */
function statusMessage(s: NodeStatus): Buffer {
  if (s.statusBin) return s.statusBin;
  const code = s.code === 0 ? Buffer.alloc(0) : Buffer.from([0x08, ...varint(s.code)]);
  return Buffer.concat([code, stringField(2, s.details)]);
}

/** The encoded field `metadata = 1` holding common.Metadata{hostname, error, status}: a whole common.Empty. */
export function metadataField(hostname: string, failure?: NodeStatus): Buffer {
  const parts = [stringField(1, hostname)];
  if (failure) parts.push(stringField(2, goStatusText(failure)), lenField(3, statusMessage(failure)));
  return lenField(1, Buffer.concat(parts));
}

/** A streamed message from `hostname`: the message with its metadata appended. */
export function appendStreamed(msg: Buffer, metadata: Buffer): Buffer {
  return Buffer.concat([msg, metadata]);
}

/** A streamed message saying `hostname` failed: common.Empty{metadata{hostname, error, status}}. */
export function streamedError(hostname: string, failure: NodeStatus): Buffer {
  return metadataField(hostname, failure);
}

/** A unary reply entry saying `hostname` failed: common.EmptyResponse{messages: [Empty{metadata}]}. */
export function unaryError(hostname: string, failure: NodeStatus): Buffer {
  return lenField(1, metadataField(hostname, failure));
}

export class WireError extends Error {}

function readVarint(b: Buffer, pos: number): [value: number, next: number] {
  let value = 0;
  let mul = 1;
  for (let i = pos; i < b.length && i < pos + 10; i++) {
    const byte = b[i];
    value += (byte & 0x7f) * mul;
    if ((byte & 0x80) === 0) return [value, i + 1];
    mul *= 128;
  }
  throw new WireError(`unexpected message format: truncated varint at byte ${pos}`);
}

/**
 * A unary reply with `metadata` appended to every `messages` (field 1) entry; other fields are kept as they
 * are. For the one-entry replies every handler gives this is upstream's rewrite byte for byte.
 */
export function appendUnary(reply: Buffer, metadata: Buffer): Buffer {
  const out: Buffer[] = [];
  let pos = 0;
  while (pos < reply.length) {
    const start = pos;
    const [tag, afterTag] = readVarint(reply, pos);
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    pos = afterTag;
    if (wire === 0) {
      pos = readVarint(reply, pos)[1];
    } else if (wire === 1 || wire === 5) {
      pos += wire === 1 ? 8 : 4;
    } else if (wire === 2) {
      const [len, afterLen] = readVarint(reply, pos);
      if (afterLen + len > reply.length) throw new WireError(`unexpected message size: ${reply.length}`);
      pos = afterLen + len;
      if (field === 1) {
        const entry = reply.subarray(afterLen, pos);
        out.push(Buffer.from([(1 << 3) | 2, ...varint(entry.length + metadata.length)]), entry, metadata);
        continue;
      }
    } else {
      throw new WireError(`unexpected message format: wire type ${wire} at byte ${start}`);
    }
    if (pos > reply.length) throw new WireError(`unexpected message size: ${reply.length}`);
    out.push(reply.subarray(start, pos));
  }
  return Buffer.concat(out);
}
