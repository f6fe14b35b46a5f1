/**
 * Small helpers over plain JS trees decoded from YAML (objects, arrays, scalars).
 */

export type PlainObject = Record<string, unknown>;

export function isPlainObject(v: unknown): v is PlainObject {
  return v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Uint8Array);
}

export function deepClone<T>(v: T): T {
  return structuredClone(v);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}

/**
 * Removes map entries whose value is null (recursively). go-yaml leaves such fields unset, so for typed reading
 * `network:` (empty) and a missing `network` mean the same. List items are kept (a null list item is an error).
 */
export function stripNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripNulls);
  if (isPlainObject(v)) {
    const out: PlainObject = {};
    for (const [k, x] of Object.entries(v)) if (x !== null && x !== undefined) out[k] = stripNulls(x);
    return out;
  }
  return v;
}

/** Removes undefined entries so the tree encodes cleanly. */
export function dropUndefined(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(dropUndefined);
  if (isPlainObject(v)) {
    const out: PlainObject = {};
    for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = dropUndefined(x);
    return out;
  }
  return v;
}

/**
 * Returns `v` with map keys ordered like in `like` (keys unknown to `like` keep their own order, after).
 * zod emits keys in schema order; this restores the author's order so an encoded document diffs cleanly.
 */
export function orderLike(v: unknown, like: unknown): unknown {
  if (Array.isArray(v)) return v.map((x, i) => orderLike(x, Array.isArray(like) ? like[i] : undefined));
  if (!isPlainObject(v)) return v;
  const out: PlainObject = {};
  const ref = isPlainObject(like) ? like : {};
  for (const k of Object.keys(ref)) if (k in v) out[k] = orderLike(v[k], ref[k]);
  for (const [k, x] of Object.entries(v)) if (!(k in out)) out[k] = orderLike(x, undefined);
  return out;
}

export function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === "object") {
    Object.freeze(v);
    for (const x of Object.values(v as object)) deepFreeze(x);
  }
  return v;
}
