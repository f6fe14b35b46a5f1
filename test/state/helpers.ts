/** Test helpers shared by the state conformance suite and the controller runtime tests. */
import { newResource, type Resource } from "../../src/machinery/resources/resource.js";
import type { WatchEvent } from "../../src/state/types.js";

export const NS = "test";
export const TYPE = "Widgets.test.talos.dev";

export function widget(id: string, spec: unknown, labels: Record<string, string> = {}, type = TYPE): Resource {
  const r = newResource({ namespace: NS, type, id }, spec);
  r.metadata.labels = { ...labels };
  return r;
}

/** Polls `cond` until it holds or `timeoutMs` passes (events are delivered asynchronously). */
export async function eventually(cond: () => boolean, timeoutMs = 2000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(2);
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Lets queued microtasks and a few timer turns run, for "nothing more arrives" assertions. */
export const settle = () => sleep(20);

export class Recorder {
  readonly events: WatchEvent[] = [];
  readonly cb = (e: WatchEvent) => {
    this.events.push(e);
  };

  async count(n: number): Promise<WatchEvent[]> {
    await eventually(() => this.events.length >= n, 2000, `${n} events (have ${this.summary()})`);
    return this.events.slice(0, n);
  }

  summary(): string {
    return JSON.stringify(this.events.map((e) => `${e.type}:${e.resource.metadata.id}@${e.resource.metadata.version}`));
  }

  /** `type:id@version` per event, for compact assertions. */
  get trace(): string[] {
    return this.events.map((e) => `${e.type}:${e.resource.metadata.id}@${e.resource.metadata.version}`);
  }
}
