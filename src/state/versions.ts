/**
 * Which stored version a handed-out copy came from. The store never mutates what it stored (each write
 * stores a fresh object), so the stored object identifies one version of one resource exactly, across
 * destroy and re-create too. Readers that derive something expensive from a resource (the API's wire
 * encodings) cache it per version with `versionKey`, in a WeakMap: entries go when the version does.
 */
import { cloneResource, type Resource } from "../machinery/resources/resource.js";

const origins = new WeakMap<object, object>();

/** Records that `stored` is a stored version (its own key, for read-only callers that get it as is). */
export function stored<S>(r: Resource<S>): Resource<S> {
  origins.set(r, r);
  return r;
}

/** A copy of a stored resource that remembers its version; the stored object itself when `readOnly`. */
export function handOut<S>(from: Resource<S>, readOnly = false): Resource<S> {
  if (readOnly && origins.get(from) === from) return from;
  const copy = cloneResource(from);
  origins.set(copy, origins.get(from) ?? from);
  return copy;
}

/**
 * The identity of the stored version `r` was copied from; undefined for a resource that did not come from
 * a store. Only meaningful while the copy is unmodified.
 */
export function versionKey(r: Resource): object | undefined {
  return origins.get(r);
}
