/**
 * Typed reads: a resource type carries its spec type, so a read through it needs no `.spec as X` cast.
 * Works on anything that can get/list resources (the State, a controller's ReconcileContext).
 */
import type { Pointer, Resource, ResourceType } from "./resource.js";

export interface ResourceReader {
  get(ptr: Pointer): Resource | undefined;
  list(namespace: string, type: string): Resource[];
}

/** The resource `id` of `type` (in its default namespace unless given). */
export function read<S>(r: Pick<ResourceReader, "get">, type: ResourceType<S>, id: string, namespace = type.defaultNamespace): Resource<S> | undefined {
  return r.get({ namespace, type: type.type, id }) as Resource<S> | undefined;
}

/** The spec of the resource `id` of `type`, or undefined when it does not exist. */
export function readSpec<S>(r: Pick<ResourceReader, "get">, type: ResourceType<S>, id: string, namespace = type.defaultNamespace): S | undefined {
  return read(r, type, id, namespace)?.spec;
}

/** Every resource of `type` in a namespace (its default one unless given). */
export function readAll<S>(r: Pick<ResourceReader, "list">, type: ResourceType<S>, namespace = type.defaultNamespace): Resource<S>[] {
  return r.list(namespace, type.type) as Resource<S>[];
}

/** A pointer to the resource `id` of `type`. */
export function pointer<S>(type: ResourceType<S>, id: string, namespace = type.defaultNamespace): Pointer {
  return { namespace, type: type.type, id };
}

/** A store's watch of one resource (the State's), as typed watches need it. */
export interface ResourceWatcher {
  watch(ptr: Pointer, cb: (e: { type: string; resource: Resource }) => void): () => void;
}

/** Watch the resource `id` of `type`: each event's resource is typed by it. Returns the unsubscribe. */
export function watch<S>(
  w: ResourceWatcher,
  type: ResourceType<S>,
  id: string,
  cb: (e: { type: string; resource: Resource<S> }) => void,
  namespace = type.defaultNamespace,
): () => void {
  return w.watch(pointer(type, id, namespace), cb as (e: { type: string; resource: Resource }) => void);
}
