/**
 * A list-then-watch loop over one kind (client-go's reflector, reduced): it lists, reports the objects, and
 * watches from the list's resource version, reporting the objects again after every change. A watch the server
 * ends is resumed from the last version seen; a failed list or watch is reported and retried from a fresh list
 * after `retryMs`. `stop()` ends the loop and waits for it.
 */
import type { KubeKind, KubeObject } from "../../machinery/kubernetes/objects.js";
import type { KubeApi, ListOptions } from "./api.js";

export interface InformerHandlers<T> {
  /** The current objects, after the first list and after every change. */
  onChange(objects: T[]): void;
  /** A list or watch failed; the loop retries after `retryMs`. */
  onError?(err: Error): void;
}

export interface InformerOptions {
  retryMs?: number;
  /** Server-side watch timeout (default 300 s). */
  watchTimeoutSeconds?: number;
}

export interface Informer<T> {
  /** True once a list has succeeded (and until the next failure). */
  readonly synced: boolean;
  objects(): T[];
  stop(): Promise<void>;
}

export function startInformer<T extends KubeObject>(
  api: KubeApi,
  kind: KubeKind,
  opts: ListOptions,
  handlers: InformerHandlers<T>,
  timing: InformerOptions = {},
): Informer<T> {
  const abort = new AbortController();
  const signal = abort.signal;
  const retryMs = timing.retryMs ?? 1_000;
  const objects = new Map<string, T>();
  let synced = false;
  const key = (o: KubeObject) => `${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;
  const emit = () => {
    if (!signal.aborted) handlers.onChange([...objects.values()]);
  };

  const loop = async () => {
    while (!signal.aborted) {
      try {
        const list = await api.list<T>(kind, opts, signal);
        objects.clear();
        for (const o of list.items) objects.set(key(o), o);
        synced = true;
        emit();
        let rv = list.resourceVersion;
        while (!signal.aborted) {
          let events = 0;
          await api.watch<T>(
            kind,
            { ...opts, resourceVersion: rv, timeoutSeconds: timing.watchTimeoutSeconds },
            (e) => {
              rv = e.object.metadata?.resourceVersion ?? rv;
              if (e.type === "BOOKMARK") return;
              events++;
              if (e.type === "DELETED") objects.delete(key(e.object));
              else objects.set(key(e.object), e.object);
              emit();
            },
            signal,
          );
          // A watch that ends at once without news is not worth resuming in a tight loop.
          if (events === 0) await sleep(retryMs, signal);
        }
      } catch (e) {
        if (signal.aborted) break;
        synced = false;
        handlers.onError?.(e instanceof Error ? e : new Error(String(e)));
        await sleep(retryMs, signal);
      }
    }
  };
  const done = loop();

  return {
    get synced() {
      return synced;
    },
    objects: () => [...objects.values()],
    stop: async () => {
      abort.abort();
      await done;
    },
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(finish, ms);
    function finish() {
      clearTimeout(t);
      signal.removeEventListener("abort", finish);
      resolve();
    }
    signal.addEventListener("abort", finish, { once: true });
  });
}
