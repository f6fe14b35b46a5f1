/**
 * Calls on other nodes and the aggregation of their replies (upstream's one2one and one2many proxying).
 *
 * - one-to-one: the target's reply and status are the call's, unchanged;
 * - one-to-many unary: every target is asked at once and the call waits for all of them; each reply gets
 *   `metadata{hostname = the target as requested}` appended to its entries, a target that failed gives one
 *   entry with `metadata{hostname, error, status}`, and the replies are concatenated in the order of the
 *   targets into one message. The call itself succeeds whatever the targets did;
 * - one-to-many streaming: each target's messages, with its metadata appended, are passed on as they come,
 *   interleaved; a target that fails gives one message with metadata.error and the others go on.
 * A target that names this node is served in-process through `local` (no dial, same bytes).
 */
import * as grpc from "@grpc/grpc-js";
import { ApiError, Code } from "../../machinery/errors.js";
import { StatusError, type BackendStream } from "./backend.js";
import type { BackendPool } from "./pool.js";
import { appendStreamed, appendUnary, metadataField, streamedError, unaryError, type NodeStatus } from "./frames.js";

/** How a call is served on this node when a target names it. */
export interface LocalServe {
  /** Unary: the encoded reply. */
  unary(): Promise<Uint8Array>;
  /** Server streaming: every encoded reply message through `send`. */
  stream(send: (msg: Uint8Array) => Promise<void>): Promise<void>;
}

export interface CallShape {
  /** Full method path. */
  path: string;
  /** Outgoing metadata (see outgoingMetadata). */
  metadata: grpc.Metadata;
  /** Encoded request messages. */
  requests: Uint8Array[] | AsyncIterable<Uint8Array>;
  /** Epoch ms, or undefined for none. */
  deadline?: number;
  /** Aborted when the caller goes away: every target's call is cancelled. */
  signal?: AbortSignal;
}

export interface Targets {
  pool: BackendPool;
  isLocal(target: string): boolean;
}

/** The status a thrown value stands for (a target's StatusError, our ApiError, anything else Internal). */
export function statusOf(err: unknown): NodeStatus {
  if (err instanceof StatusError) return { code: err.code, details: err.details, statusBin: err.statusBin };
  if (err instanceof ApiError) return { code: err.code, details: err.message };
  const e = err as { code?: unknown; message?: unknown } | undefined;
  const details = typeof e?.message === "string" ? e.message : String(err);
  if (typeof e?.code === "number" && e.code > 0 && e.code <= 16) return { code: e.code, details };
  return { code: Code.Internal, details };
}

async function open(t: Targets, target: string, call: CallShape): Promise<BackendStream> {
  const stream = await t.pool.get(target).open(call.path, call.metadata, call.deadline);
  const cancel = () => stream.cancel("call cancelled by the client");
  if (call.signal) {
    if (call.signal.aborted) cancel();
    else call.signal.addEventListener("abort", cancel, { once: true });
  }
  // Requests go in while replies are read (a client stream may be long); a failed write surfaces as the status.
  void (async () => {
    try {
      if (Array.isArray(call.requests)) {
        for (const r of call.requests) await stream.write(Buffer.from(r.buffer, r.byteOffset, r.byteLength));
      } else {
        for await (const r of call.requests) await stream.write(Buffer.from(r.buffer, r.byteOffset, r.byteLength));
      }
      stream.end();
    } catch {
      stream.cancel("request could not be sent to the target");
    }
  })();
  return stream;
}

/** One-to-one unary: the target's single reply message. */
export async function one2oneUnary(t: Targets, target: string, call: CallShape): Promise<Buffer> {
  const stream = await open(t, target, call);
  let reply: Buffer | undefined;
  for await (const msg of stream.messages()) {
    if (reply) {
      stream.cancel("target sent more than one reply");
      throw new StatusError(grpc.status.INTERNAL, "target sent more than one reply to a unary call");
    }
    reply = msg;
  }
  if (!reply) throw new StatusError(grpc.status.INTERNAL, "target sent no reply to a unary call");
  return reply;
}

/** One-to-one streaming: the target's messages passed on unchanged. */
export async function one2oneStream(t: Targets, target: string, call: CallShape, out: (msg: Buffer) => Promise<void>): Promise<void> {
  const stream = await open(t, target, call);
  try {
    for await (const msg of stream.messages()) await out(msg);
  } catch (err) {
    stream.cancel();
    throw err;
  }
}

/** One target's part of a one-to-many unary call: its reply with metadata, or its error entry. Never throws. */
async function unaryPart(t: Targets, target: string, call: CallShape, local: LocalServe): Promise<Buffer> {
  try {
    const reply = t.isLocal(target) ? Buffer.from(await local.unary()) : await one2oneUnary(t, target, call);
    return appendUnary(reply, metadataField(target));
  } catch (err) {
    return unaryError(target, statusOf(err));
  }
}

export async function one2manyUnary(t: Targets, targets: string[], call: CallShape, local: LocalServe): Promise<Buffer> {
  // Every target needs the request messages: a client stream is read once and replayed to each.
  const requests = Array.isArray(call.requests) ? call.requests : await collect(call.requests);
  const parts = await Promise.all(targets.map((target) => unaryPart(t, target, { ...call, requests }, local)));
  return Buffer.concat(parts);
}

/** One target's part of a one-to-many stream. Never throws (a failure becomes its error message). */
async function streamPart(t: Targets, target: string, call: CallShape, local: LocalServe, out: (msg: Buffer) => Promise<void>): Promise<void> {
  const md = metadataField(target);
  try {
    if (t.isLocal(target)) {
      await local.stream((msg) => out(appendStreamed(Buffer.from(msg.buffer, msg.byteOffset, msg.byteLength), md)));
    } else {
      const stream = await open(t, target, call);
      try {
        for await (const msg of stream.messages()) await out(appendStreamed(msg, md));
      } catch (err) {
        stream.cancel();
        throw err;
      }
    }
  } catch (err) {
    if (call.signal?.aborted) return;
    await out(streamedError(target, statusOf(err))).catch(() => {});
  }
}

export async function one2manyStream(t: Targets, targets: string[], call: CallShape, local: LocalServe, out: (msg: Buffer) => Promise<void>): Promise<void> {
  const requests = Array.isArray(call.requests) ? call.requests : await collect(call.requests);
  await Promise.all(targets.map((target) => streamPart(t, target, { ...call, requests }, local, out)));
}

async function collect(it: AsyncIterable<Uint8Array>): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const r of it) out.push(r);
  return out;
}
