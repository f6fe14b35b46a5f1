/**
 * MemoryKubeApi: an in-memory Kubernetes API for tests. Objects are put and removed by the test; lists filter
 * by namespace and label/field selectors like the API server, watches stream ADDED/MODIFIED/DELETED events
 * with increasing resource versions, and `down()` makes every request fail as an unreachable server does.
 */
import { matchesFields, matchesLabels } from "../../machinery/kubernetes/selector.js";
import type { KubeKind, KubeObject } from "../../machinery/kubernetes/objects.js";
import { KubeApiError, type KubeApi, type KubeList, type ListOptions, type WatchEvent, type WatchOptions } from "./api.js";

interface Watcher {
  kind: KubeKind;
  opts: ListOptions;
  onEvent: (e: WatchEvent<KubeObject>) => void;
  end: (err?: Error) => void;
}

export class MemoryKubeApi implements KubeApi {
  readonly server: string;
  /** Requests served (lists and watches started), for tests that count round trips. */
  requests = 0;
  closed = false;
  private rv = 1;
  private readonly objects = new Map<string, { kind: KubeKind; obj: KubeObject }>();
  private readonly watchers = new Set<Watcher>();
  private failure?: Error;
  /** Versions below this one are "too old" for a watch (410 Expired). */
  private compactedBelow = 0;

  constructor(server = "https://127.0.0.1:6443") {
    this.server = server;
  }

  /** Creates or replaces an object (by kind, namespace and name) and notifies matching watches. */
  put<T extends KubeObject>(kind: KubeKind, obj: T): T {
    const key = this.key(kind, obj);
    const existed = this.objects.has(key);
    const stored = structuredClone(obj);
    stored.metadata = { ...stored.metadata, resourceVersion: String(++this.rv) };
    if (kind.namespaced) stored.metadata.namespace ??= "default";
    this.objects.set(key, { kind, obj: stored });
    this.notify(kind, existed ? "MODIFIED" : "ADDED", stored);
    return structuredClone(stored) as T;
  }

  remove(kind: KubeKind, name: string, namespace?: string): boolean {
    const key = this.key(kind, { metadata: { name, namespace } });
    const cur = this.objects.get(key);
    if (!cur) return false;
    this.objects.delete(key);
    const gone = { ...cur.obj, metadata: { ...cur.obj.metadata, resourceVersion: String(++this.rv) } };
    this.notify(kind, "DELETED", gone);
    return true;
  }

  /** Every request fails with `err` until `up()`; open watches end with it. */
  down(err: Error = new Error(`Get "${this.server}": dial tcp 127.0.0.1:6443: connect: connection refused`)): void {
    this.failure = err;
    for (const w of [...this.watchers]) w.end(err);
  }

  up(): void {
    this.failure = undefined;
  }

  /** Ends open watches normally, as the server does when their timeout passes. */
  endWatches(): void {
    for (const w of [...this.watchers]) w.end();
  }

  /** Forgets history: watches from any current version answer 410 Expired, as after an etcd compaction. */
  compact(): void {
    this.compactedBelow = ++this.rv;
    for (const w of [...this.watchers]) w.end(new KubeApiError(410, "Expired", "too old resource version"));
  }

  get openWatches(): number {
    return this.watchers.size;
  }

  async list<T extends KubeObject>(kind: KubeKind, opts: ListOptions = {}, signal?: AbortSignal): Promise<KubeList<T>> {
    this.check(signal);
    const items = [...this.objects.values()].filter((o) => o.kind === kind && this.matches(kind, opts, o.obj)).map((o) => structuredClone(o.obj) as T);
    return { items, resourceVersion: String(this.rv) };
  }

  watch<T extends KubeObject>(kind: KubeKind, opts: WatchOptions, onEvent: (e: WatchEvent<T>) => void, signal?: AbortSignal): Promise<void> {
    try {
      this.check(signal);
    } catch (e) {
      return Promise.reject(e);
    }
    if (Number(opts.resourceVersion) < this.compactedBelow) {
      return Promise.reject(new KubeApiError(410, "Expired", `too old resource version: ${opts.resourceVersion} (${this.compactedBelow})`));
    }
    return new Promise<void>((resolve, reject) => {
      const w: Watcher = {
        kind,
        opts,
        onEvent: onEvent as (e: WatchEvent<KubeObject>) => void,
        end: (err) => {
          this.watchers.delete(w);
          signal?.removeEventListener("abort", abort);
          if (err) reject(err);
          else resolve();
        },
      };
      const abort = () => w.end();
      signal?.addEventListener("abort", abort, { once: true });
      this.watchers.add(w);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of [...this.watchers]) w.end();
  }

  private check(signal?: AbortSignal): void {
    if (signal?.aborted) throw signal.reason ?? new Error("aborted");
    if (this.closed) throw new Error("client is closed");
    this.requests++;
    if (this.failure) throw this.failure;
  }

  private matches(kind: KubeKind, opts: ListOptions, obj: KubeObject): boolean {
    if (kind.namespaced && opts.namespace && obj.metadata?.namespace !== opts.namespace) return false;
    return matchesLabels(opts.labelSelector, obj.metadata?.labels) && matchesFields(opts.fieldSelector, obj);
  }

  private notify(kind: KubeKind, type: WatchEvent<KubeObject>["type"], obj: KubeObject): void {
    for (const w of [...this.watchers]) {
      if (w.kind !== kind || !this.matches(kind, w.opts, obj)) continue;
      const copy = structuredClone(obj);
      // Delivered later, as a stream would.
      queueMicrotask(() => {
        if (this.watchers.has(w)) w.onEvent({ type, object: copy });
      });
    }
  }

  private key(kind: KubeKind, obj: KubeObject): string {
    const name = obj.metadata?.name;
    if (!name) throw new Error("object has no metadata.name");
    return `${kind.group}/${kind.plural}/${kind.namespaced ? (obj.metadata?.namespace ?? "default") : ""}/${name}`;
  }
}
