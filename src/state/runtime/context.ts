/**
 * Builds the ReconcileContext a controller sees: reads pass straight to the store, writes are checked
 * against the declared outputs and performed with the controller name as owner (the store then
 * enforces that nobody else's resources are touched).
 */
import { ApiError, Code } from "../../machinery/errors.js";
import { newResource, type Pointer, type Resource } from "../../machinery/resources/resource.js";
import type { State } from "../types.js";
import type { Controller, ReconcileContext, ResourceInit, RuntimeLogger } from "./controller.js";

export function reconcileContext(
  state: State,
  controller: Controller,
  signal: AbortSignal,
  logger: RuntimeLogger,
): ReconcileContext {
  const owner = controller.name;
  const outputs = new Set(controller.outputs.map((o) => o.type));

  const writable = (type: string) => {
    if (signal.aborted) throw new ApiError(Code.Canceled, `controller ${owner}: runtime is stopping`);
    if (!outputs.has(type)) {
      throw new ApiError(Code.PermissionDenied, `controller ${owner} may not write ${type}: it is not among its outputs`);
    }
  };

  return {
    owner,
    signal,
    get: (ptr) => state.get(ptr),
    list: (namespace, type, opts) => state.list(namespace, type, opts),
    apply<S>(r: Resource<S> | ResourceInit<S>): Resource<S> {
      const res = "metadata" in r ? r : fromInit(r);
      writable(res.metadata.type);
      return state.apply(res, owner) as Resource<S>;
    },
    destroy(ptr: Pointer): boolean {
      writable(ptr.type);
      if (!state.get(ptr)) return false;
      state.destroy(ptr, owner);
      return true;
    },
    cleanup(namespace, type, keep) {
      writable(type);
      const kept = new Set(keep);
      let destroyed = 0;
      for (const r of state.list(namespace, type)) {
        if (r.metadata.owner !== owner || kept.has(r.metadata.id)) continue;
        // Someone still holds it; the next reconcile after they let go (an input event) retries.
        if (r.metadata.finalizers.length > 0) {
          logger(owner, "cleanup deferred: resource has finalizers", { id: r.metadata.id, finalizers: r.metadata.finalizers });
          continue;
        }
        state.destroy(r.metadata, owner);
        destroyed++;
      }
      return destroyed;
    },
    log: (msg, fields) => logger(owner, msg, fields),
  };
}

function fromInit<S>(init: ResourceInit<S>): Resource<S> {
  const r = newResource({ namespace: init.namespace, type: init.type, id: init.id }, init.spec);
  r.metadata.labels = { ...(init.labels ?? {}) };
  r.metadata.annotations = { ...(init.annotations ?? {}) };
  return r;
}
