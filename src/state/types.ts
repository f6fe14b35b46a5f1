/**
 * The resource store contract. The in-memory implementation lives in inmem.ts; every implementation
 * must pass test/state/conformance.ts.
 *
 * Writes name their owner: only the resource's owner may update or destroy it (owner "" is a
 * resource written outside any controller, e.g. the config loader).
 */
import type { Resource, Pointer } from "../machinery/resources/resource.js";

export type EventType = "created" | "updated" | "destroyed" | "bootstrapped" | "errored" | "noop";

export interface WatchEvent {
  type: EventType;
  /** For destroyed: the last version. For bootstrapped: a tombstone with only namespace/type. */
  resource: Resource;
  old?: Resource;
  error?: string;
}

export type LabelOp = "exists" | "equal" | "in" | "lt" | "lte" | "ltNumeric" | "lteNumeric";

export interface LabelTerm {
  key: string;
  op: LabelOp;
  values: string[];
  invert?: boolean;
}

export interface ListOptions {
  /** Terms are ANDed. */
  labels?: LabelTerm[];
  /** Regular expression an id must match (already validated by the caller). */
  idRegexp?: RegExp;
  /**
   * The caller only reads what it is given (the API encoding resources for the wire): the store may hand
   * out its own immutable objects instead of copies, which a List of thousands or an event fanned out to
   * many watchers would otherwise pay for. Such objects must never be modified.
   */
  readOnly?: boolean;
}

export interface WatchOptions {
  /** As ListOptions.readOnly, for the events' resources. */
  readOnly?: boolean;
}

export interface WatchKindOptions extends ListOptions {
  /** Replay existing resources as "created", then send "bootstrapped". */
  bootstrapContents?: boolean;
  /** Replay the last N events of this kind from history instead. */
  tailEvents?: number;
}

export type Unsubscribe = () => void;

export interface State {
  get(ptr: Pointer): Resource | undefined;
  list(namespace: string, type: string, opts?: ListOptions): Resource[];
  /** Throws ApiError AlreadyExists if present. Sets version 1, created/updated. */
  create(r: Resource, owner: string): Resource;
  /** Throws NotFound if absent, PermissionDenied if owner differs. Bumps version and updated. */
  update(r: Resource, owner: string): Resource;
  /** Create or update, keeping created; no-op (no event, no version bump) if spec/labels/annotations are unchanged. */
  apply(r: Resource, owner: string): Resource;
  /** Throws NotFound if absent, PermissionDenied if owner differs. */
  destroy(ptr: Pointer, owner: string): void;
  /** Watch one resource: first event is its current state (created) or a destroyed tombstone. */
  watch(ptr: Pointer, cb: (e: WatchEvent) => void, opts?: WatchOptions): Unsubscribe;
  /** Watch a whole kind (namespace + type). */
  watchKind(namespace: string, type: string, opts: WatchKindOptions, cb: (e: WatchEvent) => void): Unsubscribe;
}
