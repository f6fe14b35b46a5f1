/**
 * The per-service event history shown by `talosctl service <id>`: a fixed number of the most recent
 * transitions, oldest first.
 */
import { stateName, type ServiceEventRecord, type ServiceState } from "./types.js";

/** Upstream keeps 64 events per service (events.MaxEventsToKeep). */
export const MAX_EVENTS = 64;

export class EventHistory {
  private items: ServiceEventRecord[] = [];

  constructor(private readonly max = MAX_EVENTS) {}

  push(state: ServiceState, msg: string, ts = new Date()): ServiceEventRecord {
    const e = { msg, state: stateName(state), ts };
    this.items.push(e);
    if (this.items.length > this.max) this.items.splice(0, this.items.length - this.max);
    return e;
  }

  list(): ServiceEventRecord[] {
    return this.items.map((e) => ({ ...e }));
  }

  last(): ServiceEventRecord | undefined {
    return this.items[this.items.length - 1];
  }
}
