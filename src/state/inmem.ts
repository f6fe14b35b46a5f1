/**
 * The in-memory resource store (COSI inmem semantics; talos-resource-api.md §1.4 in the shared reference):
 * namespace × type collections, versions starting at 1, owner enforcement, label/id queries, and
 * watches fed from a bounded per-kind history.
 *
 * Stored resources are private and never mutated after insertion (every write stores a fresh copy), so
 * history entries can share them; everything handed out is cloned again.
 */
import { cloneResource, type Pointer, type Resource } from "../machinery/resources/resource.js";
import { alreadyExists, ApiError, Code, failedPrecondition, invalidArgument, notFound } from "../machinery/errors.js";
import type { ListOptions, State, Unsubscribe, WatchEvent, WatchKindOptions, WatchOptions } from "./types.js";
import { deepEqual } from "./equal.js";
import { History } from "./history.js";
import { matchesQuery } from "./query.js";
import { Subscriber } from "./subscriber.js";
import { describe, kindEvent, tombstone } from "./tombstone.js";
import { handOut, stored as markStored } from "./versions.js";

export interface InMemoryStateOptions {
  /** Events kept per kind for `tailEvents` (COSI's default history is of this order). */
  historyCapacity?: number;
  /** Undelivered events a watcher may fall behind before it gets an `errored` event. */
  subscriberLimit?: number;
}

interface KindWatch {
  sub: Subscriber;
  opts: ListOptions;
}

interface IdWatch {
  sub: Subscriber;
  readOnly: boolean;
}

interface Kind {
  namespace: string;
  type: string;
  items: Map<string, Resource>;
  history: History;
  kindWatches: Set<KindWatch>;
  idWatches: Map<string, Set<IdWatch>>;
}

export class InMemoryState implements State {
  private readonly kinds = new Map<string, Kind>();
  private readonly historyCapacity: number;
  private readonly subscriberLimit: number;

  constructor(opts: InMemoryStateOptions = {}) {
    this.historyCapacity = opts.historyCapacity ?? 1000;
    this.subscriberLimit = Math.max(1, opts.subscriberLimit ?? Math.max(this.historyCapacity, 1000));
  }

  get(ptr: Pointer): Resource | undefined {
    const r = this.kind(ptr.namespace, ptr.type, false)?.items.get(ptr.id);
    return r && handOut(r);
  }

  list(namespace: string, type: string, opts?: ListOptions): Resource[] {
    const kind = this.kind(namespace, type, false);
    if (!kind) return [];
    const readOnly = opts?.readOnly === true;
    return [...kind.items.values()]
      .filter((r) => matchesQuery(r.metadata, opts))
      .sort((a, b) => compareIds(a.metadata.id, b.metadata.id))
      .map((r) => handOut(r, readOnly));
  }

  create(r: Resource, owner: string): Resource {
    const kind = this.kind(r.metadata.namespace, r.metadata.type, true);
    if (kind.items.has(r.metadata.id)) throw alreadyExists(`resource ${describe(r.metadata)} already exists`);
    const now = new Date();
    const stored = cloneResource(r);
    Object.assign(stored.metadata, { version: 1, owner, created: now, updated: now });
    this.store(kind, stored, { type: "created", resource: stored });
    return handOut(stored);
  }

  update(r: Resource, owner: string): Resource {
    const { kind, current } = this.owned(r.metadata, owner);
    return this.replace(kind, current, cloneResource(r));
  }

  apply(r: Resource, owner: string): Resource {
    const kind = this.kind(r.metadata.namespace, r.metadata.type, true);
    if (!kind.items.has(r.metadata.id)) return this.create(r, owner);
    const { current } = this.owned(r.metadata, owner);
    const unchanged =
      deepEqual(current.spec, r.spec) &&
      deepEqual(current.metadata.labels, r.metadata.labels) &&
      deepEqual(current.metadata.annotations, r.metadata.annotations);
    if (unchanged) return handOut(current);
    // Finalizers and phase belong to the stored resource: an applier only states the desired content.
    const next = cloneResource(r);
    next.metadata.finalizers = [...current.metadata.finalizers];
    next.metadata.phase = current.metadata.phase;
    return this.replace(kind, current, next);
  }

  destroy(ptr: Pointer, owner: string): void {
    const { kind, current } = this.owned(ptr, owner);
    if (current.metadata.finalizers.length > 0) {
      throw failedPrecondition(
        `resource ${describe(ptr)} has pending finalizers ${JSON.stringify(current.metadata.finalizers)}`,
      );
    }
    kind.items.delete(ptr.id);
    this.publish(kind, { type: "destroyed", resource: current });
  }

  /** Marks a resource as tearing down; returns true when it has no finalizers left (ready to destroy). */
  teardown(ptr: Pointer, owner: string): boolean {
    const { kind, current } = this.owned(ptr, owner);
    if (current.metadata.phase !== "tearingDown") {
      const next = cloneResource(current);
      next.metadata.phase = "tearingDown";
      this.replace(kind, current, next);
    }
    return current.metadata.finalizers.length === 0;
  }

  /** Adds finalizers (any writer may, as in COSI); a no-op when all are already present. */
  addFinalizer(ptr: Pointer, ...names: string[]): void {
    this.editFinalizers(ptr, (f) => [...f, ...names.filter((n) => !f.includes(n))]);
  }

  removeFinalizer(ptr: Pointer, ...names: string[]): void {
    this.editFinalizers(ptr, (f) => f.filter((n) => !names.includes(n)));
  }

  watch(ptr: Pointer, cb: (e: WatchEvent) => void, opts?: WatchOptions): Unsubscribe {
    const kind = this.kind(ptr.namespace, ptr.type, true);
    let subs = kind.idWatches.get(ptr.id);
    if (!subs) kind.idWatches.set(ptr.id, (subs = new Set()));
    const set = subs;
    const readOnly = opts?.readOnly === true;
    const watch: IdWatch = { sub: undefined as unknown as Subscriber, readOnly };
    watch.sub = this.subscriber(kind, cb, () => {
      set.delete(watch);
      if (set.size === 0 && kind.idWatches.get(ptr.id) === set) kind.idWatches.delete(ptr.id);
    });
    set.add(watch);
    const current = kind.items.get(ptr.id);
    watch.sub.push(
      current
        ? { type: "created", resource: handOut(current, readOnly) }
        : { type: "destroyed", resource: tombstone(ptr.namespace, ptr.type, ptr.id) },
    );
    return () => watch.sub.cancel();
  }

  watchKind(namespace: string, type: string, opts: WatchKindOptions, cb: (e: WatchEvent) => void): Unsubscribe {
    const tail = opts.tailEvents ?? 0;
    if (opts.bootstrapContents && tail > 0) {
      throw invalidArgument("cannot use bootstrapContents together with tailEvents");
    }
    const kind = this.kind(namespace, type, true);
    const watch: KindWatch = { sub: undefined as unknown as Subscriber, opts };
    watch.sub = this.subscriber(kind, cb, () => kind.kindWatches.delete(watch));

    if (opts.bootstrapContents) {
      for (const r of this.list(namespace, type, opts)) watch.sub.push({ type: "created", resource: r });
      watch.sub.push({ type: "bootstrapped", resource: tombstone(namespace, type, "") });
    } else if (tail > 0) {
      // As in COSI the tail is counted over the kind's history and then filtered by the query.
      for (const e of kind.history.tail(tail)) {
        const filtered = kindEvent(e, opts);
        if (filtered) watch.sub.push(filtered);
      }
    }
    kind.kindWatches.add(watch);
    return () => watch.sub.cancel();
  }

  private subscriber(kind: Kind, cb: (e: WatchEvent) => void, detach: () => void): Subscriber {
    const overrun = (): WatchEvent => ({
      type: "errored",
      resource: tombstone(kind.namespace, kind.type, ""),
      error: `buffer overrun: namespace ${JSON.stringify(kind.namespace)} type ${JSON.stringify(kind.type)}`,
    });
    return new Subscriber(cb, this.subscriberLimit, overrun, detach);
  }

  private editFinalizers(ptr: Pointer, edit: (f: string[]) => string[]): void {
    const kind = this.kind(ptr.namespace, ptr.type, false);
    const current = kind?.items.get(ptr.id);
    if (!kind || !current) throw notFound(`resource ${describe(ptr)} doesn't exist`);
    const finalizers = edit(current.metadata.finalizers);
    if (deepEqual(finalizers, current.metadata.finalizers)) return;
    const next = cloneResource(current);
    next.metadata.finalizers = finalizers;
    this.replace(kind, current, next);
  }

  /** Looks a resource up for a write by `owner`, enforcing existence and ownership. */
  private owned(ptr: Pointer, owner: string): { kind: Kind; current: Resource } {
    const kind = this.kind(ptr.namespace, ptr.type, false);
    const current = kind?.items.get(ptr.id);
    if (!kind || !current) throw notFound(`resource ${describe(ptr)} doesn't exist`);
    if (current.metadata.owner !== owner) {
      throw new ApiError(
        Code.PermissionDenied,
        `resource ${describe(ptr)} is owned by ${JSON.stringify(current.metadata.owner)}, not by ${JSON.stringify(owner)}`,
      );
    }
    return { kind, current };
  }

  /** Stores `next` (a private copy) in place of `current`: bumps the version and keeps owner and created. */
  private replace(kind: Kind, current: Resource, next: Resource): Resource {
    Object.assign(next.metadata, {
      version: current.metadata.version + 1,
      owner: current.metadata.owner,
      created: current.metadata.created,
      updated: new Date(),
    });
    this.store(kind, next, { type: "updated", resource: next, old: current });
    return handOut(next);
  }

  private store(kind: Kind, stored: Resource, event: WatchEvent): void {
    kind.items.set(stored.metadata.id, markStored(stored));
    this.publish(kind, event);
  }

  private publish(kind: Kind, event: WatchEvent): void {
    kind.history.push(event);
    for (const w of kind.kindWatches) {
      const e = kindEvent(event, w.opts);
      if (e) w.sub.push(e);
    }
    for (const w of kind.idWatches.get(event.resource.metadata.id) ?? []) w.sub.push(kindEvent(event, w.readOnly ? READ_ONLY : undefined)!);
  }

  private kind(namespace: string, type: string, create: true): Kind;
  private kind(namespace: string, type: string, create: false): Kind | undefined;
  private kind(namespace: string, type: string, create: boolean): Kind | undefined {
    const key = `${namespace}\u0000${type}`;
    let kind = this.kinds.get(key);
    if (!kind && create) {
      kind = {
        namespace,
        type,
        items: new Map(),
        history: new History(this.historyCapacity),
        kindWatches: new Set(),
        idWatches: new Map(),
      };
      this.kinds.set(key, kind);
    }
    return kind;
  }
}

const READ_ONLY: ListOptions = { readOnly: true };

/** Go sorts ids as byte strings; plain `<` on UTF-16 agrees for the ASCII ids resources use. */
function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
