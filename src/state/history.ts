/**
 * A fixed-size ring of the most recent events of one kind, for `tailEvents` watches. Stored events hold
 * frozen private copies; the store clones them again on delivery.
 */
import type { WatchEvent } from "./types.js";

export class History {
  private readonly ring: WatchEvent[] = [];
  private next = 0;

  constructor(readonly capacity: number) {}

  push(e: WatchEvent): void {
    if (this.capacity <= 0) return;
    if (this.ring.length < this.capacity) this.ring.push(e);
    else this.ring[this.next] = e;
    this.next = (this.next + 1) % this.capacity;
  }

  /** The last `n` events, oldest first (fewer if the ring holds fewer). */
  tail(n: number): WatchEvent[] {
    const all =
      this.ring.length < this.capacity ? this.ring : [...this.ring.slice(this.next), ...this.ring.slice(0, this.next)];
    return n >= all.length ? [...all] : all.slice(all.length - n);
  }
}
