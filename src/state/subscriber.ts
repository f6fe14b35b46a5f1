/**
 * One watch subscription: an ordered queue drained on a microtask, so callbacks never run inside the
 * write that produced the event (a controller writing from its callback cannot re-enter the store
 * mid-write) and each subscriber sees events strictly in order.
 *
 * The queue is bounded like COSI's per-kind ring: a subscriber that falls more than `limit` events
 * behind gets one `errored` event ("buffer overrun") and then nothing more, instead of growing memory
 * forever.
 */
import type { WatchEvent } from "./types.js";

export class Subscriber {
  private queue: WatchEvent[] = [];
  private head = 0;
  private scheduled = false;
  /** No more events are accepted (overrun or unsubscribed). */
  private sealed = false;
  private cancelled = false;

  constructor(
    private readonly cb: (e: WatchEvent) => void,
    private readonly limit: number,
    /** Builds the overrun event; the store knows the kind being watched. */
    private readonly overrun: () => WatchEvent,
    /** Detaches this subscriber from the store. */
    private readonly detach: () => void,
  ) {}

  push(e: WatchEvent): void {
    if (this.sealed) return;
    if (this.queue.length - this.head >= this.limit) {
      this.queue = [this.overrun()];
      this.head = 0;
      this.sealed = true;
      this.detach();
    } else {
      this.queue.push(e);
    }
    this.schedule();
  }

  /** Unsubscribe: pending events are dropped and the callback is never called again. */
  cancel(): void {
    this.sealed = true;
    this.cancelled = true;
    this.queue = [];
    this.head = 0;
    this.detach();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => this.drain());
  }

  private drain(): void {
    this.scheduled = false;
    while (!this.cancelled && this.head < this.queue.length) {
      const e = this.queue[this.head++];
      try {
        this.cb(e);
      } catch {
        // A throwing watcher must not break delivery to itself or to others; the callback owns its errors.
      }
    }
    this.queue = [];
    this.head = 0;
  }
}
