/**
 * Small helpers shared by stores: tombstones, pointer descriptions for error messages, and the
 * per-watcher view of an event.
 */
import type { Pointer, Resource } from "../machinery/resources/resource.js";
import type { ListOptions, WatchEvent } from "./types.js";
import { matchesQuery } from "./query.js";
import { handOut } from "./versions.js";

/**
 * Metadata-only resource for "does not exist" and marker events. Version 0 means "undefined" (the API
 * sends the literal `undefined`), timestamps are the zero time, and the spec is absent.
 */
export function tombstone(namespace: string, type: string, id: string): Resource {
  return {
    metadata: {
      namespace,
      type,
      id,
      version: 0,
      owner: "",
      phase: "running",
      created: new Date(0),
      updated: new Date(0),
      labels: {},
      annotations: {},
      finalizers: [],
    },
    spec: undefined,
  };
}

export function isTombstone(r: Resource): boolean {
  return r.metadata.version === 0;
}

/** `Type(namespace/id)`, the shape COSI uses in its error messages. */
export function describe(ptr: Pointer): string {
  return `${ptr.type}(${ptr.namespace}/${ptr.id})`;
}

/**
 * What a kind watcher with query `opts` sees of `e`, as a fresh copy (the stored objects themselves for
 * a read-only watcher); undefined when filtered out.
 * An update that moves a resource into (out of) the query is seen as created (destroyed), as in COSI.
 */
export function kindEvent(e: WatchEvent, opts?: ListOptions): WatchEvent | undefined {
  const readOnly = opts?.readOnly === true;
  const copy = (type: WatchEvent["type"], withOld: boolean): WatchEvent => {
    const out: WatchEvent = { type, resource: handOut(e.resource, readOnly) };
    if (withOld && e.old) out.old = handOut(e.old, readOnly);
    if (e.error !== undefined) out.error = e.error;
    return out;
  };
  if (e.type !== "created" && e.type !== "updated" && e.type !== "destroyed") return copy(e.type, false);
  const now = matchesQuery(e.resource.metadata, opts);
  if (e.type !== "updated") return now ? copy(e.type, false) : undefined;
  const before = matchesQuery(e.old!.metadata, opts);
  if (before && now) return copy("updated", true);
  if (now) return copy("created", false);
  if (before) return copy("destroyed", false);
  return undefined;
}
