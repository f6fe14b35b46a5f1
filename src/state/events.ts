/**
 * The machine event bus behind /machine.MachineService/Events: a bounded history plus live subscribers.
 * Payloads are protobuf messages from the generated `machine` package; the API wraps each one in an Any
 * with type URL `talos/runtime/<full name>`.
 */
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";

export interface MachineEvent {
  /** 20-character xid, sortable by time. */
  id: string;
  actorId: string;
  ts: Date;
  schema: DescMessage;
  payload: MessageShape<DescMessage>;
}

export interface TailOptions {
  /** 0: none, -1: all, N: last N. */
  tailEvents?: number;
  /** Events strictly after this id. */
  tailId?: string;
  /** Events from the last N seconds. */
  tailSeconds?: number;
  actorId?: string;
}

const XID_ALPHABET = "0123456789abcdefghijklmnopqrstuv";
let counter = Math.floor(Math.random() * 0xffffff);
const machineBytes = crypto.getRandomValues(new Uint8Array(5));

/** A 12-byte xid (4 bytes seconds, 5 random, 3 counter) encoded as 20 base32hex characters. */
export function newXid(now = Date.now()): string {
  const b = new Uint8Array(12);
  const secs = Math.floor(now / 1000);
  b[0] = (secs >>> 24) & 0xff;
  b[1] = (secs >>> 16) & 0xff;
  b[2] = (secs >>> 8) & 0xff;
  b[3] = secs & 0xff;
  b.set(machineBytes, 4);
  counter = (counter + 1) & 0xffffff;
  b[9] = (counter >>> 16) & 0xff;
  b[10] = (counter >>> 8) & 0xff;
  b[11] = counter & 0xff;
  let bits = 0;
  let value = 0;
  let out = "";
  for (const byte of b) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += XID_ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += XID_ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

export class EventBus {
  private history: MachineEvent[] = [];
  private subscribers = new Set<(e: MachineEvent) => void>();

  constructor(private readonly capacity = 1000) {}

  publish<D extends DescMessage>(schema: D, payload: MessageShape<D>, actorId = ""): MachineEvent {
    const e: MachineEvent = { id: newXid(), actorId, ts: new Date(), schema, payload: payload as MessageShape<DescMessage> };
    this.history.push(e);
    if (this.history.length > this.capacity) this.history.splice(0, this.history.length - this.capacity);
    for (const s of this.subscribers) s(e);
    return e;
  }

  /** History selected by the tail options, oldest first. */
  tail(opts: TailOptions): MachineEvent[] {
    let list = this.history;
    if (opts.actorId) list = list.filter((e) => e.actorId === opts.actorId);
    if (opts.tailId) {
      const i = list.findIndex((e) => e.id === opts.tailId);
      return i < 0 ? [] : list.slice(i + 1);
    }
    if (opts.tailSeconds && opts.tailSeconds > 0) {
      const since = Date.now() - opts.tailSeconds * 1000;
      return list.filter((e) => e.ts.getTime() >= since);
    }
    const n = opts.tailEvents ?? 0;
    if (n < 0) return [...list];
    if (n === 0) return [];
    return list.slice(-n);
  }

  subscribe(cb: (e: MachineEvent) => void): () => void {
    this.subscribers.add(cb);
    return () => this.subscribers.delete(cb);
  }

  /** Forget history: a (simulated) reboot starts a new event log, so trackers never replay the old boot. */
  reset(): void {
    this.history = [];
  }
}
