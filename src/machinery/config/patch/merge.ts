/**
 * Talos strategic merge of one patch document into one config document, on plain YAML trees.
 *
 * Generic rules (upstream pkg/machinery/config/merge):
 *  - maps merge key by key, recursively;
 *  - lists append the patch items to the existing ones;
 *  - a scalar replaces the old value, except that an empty string or 0 in the patch leaves an existing value alone
 *    (Go cannot tell an explicit zero from "not set"); booleans always replace, so `dhcp: false` works;
 *  - null in the patch changes nothing.
 * Exceptions per field (keyed lists, replace, extraArgs) come from rules.ts.
 */
import { deepClone, isPlainObject, type PlainObject } from "../tree.js";
import { ruleFor } from "./rules.js";

const isZeroScalar = (v: unknown) => v === "" || v === 0;

function child(pattern: string, key: string): string {
  return pattern === "" ? key : `${pattern}.${key}`;
}

export function mergeValue(kind: string, pattern: string, left: unknown, right: unknown): unknown {
  if (right === null || right === undefined) return left;
  const rule = ruleFor(kind, pattern);
  if (rule?.kind === "replace" || left === null || left === undefined) return deepClone(right);

  if (Array.isArray(left) && Array.isArray(right)) {
    if (rule?.kind !== "keyed") return [...left, ...deepClone(right)];
    const out = [...left];
    for (const item of right) {
      const idx = out.findIndex((x) => rule.match(x, item));
      if (idx < 0) out.push(deepClone(item));
      else out[idx] = rule.replaceItem ? deepClone(item) : mergeValue(kind, `${pattern}[]`, out[idx], item);
    }
    return out;
  }

  if (isPlainObject(left) && isPlainObject(right)) {
    const out: PlainObject = { ...left };
    for (const [k, v] of Object.entries(right)) {
      if (rule?.kind === "args") {
        if (v !== null && v !== undefined) out[k] = deepClone(v);
      } else {
        out[k] = mergeValue(kind, child(pattern, k), left[k], v);
      }
    }
    return out;
  }

  if (isZeroScalar(right)) return left;
  return deepClone(right);
}

/** Merges patch document `right` into config document `left` of the given kind ("v1alpha1" for the legacy one). */
export function mergeDocument(kind: string, left: PlainObject, right: PlainObject): PlainObject {
  return mergeValue(kind, "", left, right) as PlainObject;
}
