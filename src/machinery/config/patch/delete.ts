/**
 * `$patch: delete` directives in strategic merge patches (upstream configloader "patch delete" selectors):
 *  - `key: {$patch: delete}` removes `key` (the path to it may not go through a list);
 *  - a list item `{name: foo, $patch: delete}` removes the first item whose `name` (the first other key) is `foo`;
 *  - a document made of apiVersion/kind[/name] plus `$patch: delete` removes that whole document.
 * Directives are taken out of the patch document and applied to the config before the rest is merged. A parent
 * left empty by taking a directive out is dropped from the patch too.
 */
import { ConfigError } from "../errors.js";
import { formatPath, type PathSegment } from "../path.js";
import { isPlainObject, type PlainObject } from "../tree.js";

export type Deletion =
  | { kind: "document" }
  | { kind: "key"; path: string[] }
  | { kind: "item"; path: string[]; key: string; value: string };

const DIRECTIVE = "$patch";

function isDeleteMarker(v: unknown): v is PlainObject {
  if (!isPlainObject(v) || !(DIRECTIVE in v)) return false;
  if (v[DIRECTIVE] !== "delete") {
    throw new ConfigError(`unsupported ${DIRECTIVE} directive ${JSON.stringify(v[DIRECTIVE])} (only "delete" is supported)`);
  }
  return true;
}

function hasIndex(path: PathSegment[]): boolean {
  return path.some((p) => typeof p === "number");
}

/**
 * Removes the directives from `doc` (a clone is returned as `rest`; undefined when nothing but the document's
 * identity is left) and lists the deletions they stand for.
 */
export function extractDeletes(doc: PlainObject): { rest: PlainObject | undefined; deletes: Deletion[] } {
  const deletes: Deletion[] = [];
  if (isDeleteMarker(doc)) {
    if (!("kind" in doc) && !("apiVersion" in doc)) {
      throw new ConfigError("can't delete the root of the legacy document");
    }
    return { rest: undefined, deletes: [{ kind: "document" }] };
  }

  // Returns the value with directives removed, or undefined when it should disappear from the patch.
  const walk = (v: unknown, path: PathSegment[]): unknown => {
    if (Array.isArray(v)) {
      const out: unknown[] = [];
      v.forEach((item, i) => {
        if (isDeleteMarker(item)) {
          const entry = Object.entries(item).find(([k]) => k !== DIRECTIVE);
          if (!entry) throw new ConfigError(`no key:value found in list item for path ${formatPath([...path, i])}`);
          if (hasIndex(path)) {
            throw new ConfigError(`cannot delete a list item inside another list in '${formatPath([...path, i])}'`);
          }
          deletes.push({ kind: "item", path: path as string[], key: entry[0], value: String(entry[1]) });
          return;
        }
        const w = walk(item, [...path, i]);
        if (w !== undefined) out.push(w);
      });
      return out.length === 0 && v.length > 0 ? undefined : out;
    }
    if (isPlainObject(v)) {
      const out: PlainObject = {};
      const entries = Object.entries(v);
      for (const [k, x] of entries) {
        if (isDeleteMarker(x)) {
          const p = [...path, k];
          if (hasIndex(p)) throw new ConfigError(`cannot delete an inner key in '${formatPath(p)}'`);
          deletes.push({ kind: "key", path: p as string[] });
          continue;
        }
        const w = walk(x, [...path, k]);
        if (w !== undefined) out[k] = w;
      }
      return Object.keys(out).length === 0 && entries.length > 0 ? undefined : out;
    }
    return v;
  };

  const rest = (walk(doc, []) as PlainObject | undefined) ?? {};
  const identityOnly = Object.keys(rest).every((k) => ["version", "apiVersion", "kind", "name"].includes(k));
  return { rest: identityOnly && deletes.length > 0 ? undefined : rest, deletes };
}

/** Applies a key or item deletion to `doc` (in place). Throws "lookup failed" when the target does not exist. */
export function applyDeletion(doc: PlainObject, del: Exclude<Deletion, { kind: "document" }>, docId: string): void {
  const shown = formatPath(del.path);
  const fail = (): never => {
    throw new ConfigError(`patch delete: path '${shown}' in document '${docId}': failed to delete path '${shown}': lookup failed`);
  };
  const steps = del.kind === "key" ? del.path.slice(0, -1) : del.path;
  let cur: unknown = doc;
  for (const k of steps) {
    if (!isPlainObject(cur) || cur[k] === undefined || cur[k] === null) fail();
    cur = (cur as PlainObject)[k];
  }
  if (del.kind === "key") {
    if (!isPlainObject(cur)) return fail();
    delete cur[del.path[del.path.length - 1]];
    return;
  }
  if (!Array.isArray(cur)) return fail();
  const idx = cur.findIndex((item) => isPlainObject(item) && item[del.key] !== undefined && String(item[del.key]) === del.value);
  if (idx < 0) fail();
  cur.splice(idx, 1);
}
