/**
 * Talos strategic merge of one patch document into one config document. Upstream merges the decoded Go values by
 * reflection (pkg/machinery/config/merge); this follows the same rules on plain YAML trees, guided by the Go types
 * (encode/go-types.ts), because the rules depend on the types:
 *  - maps merge key by key, lists append the patch items, structs merge field by field;
 *  - a scalar replaces the old value unless it is Go's zero ("" or 0), which leaves the old value alone — except
 *    behind a pointer (`mtu: 0` in a `*uint32` field does apply) and for booleans, which always replace;
 *  - an absent or null value in the patch changes nothing;
 *  - per type: `merge:"replace"` fields (pod subnets, audit policy ...) are replaced, extraArgs replace per flag,
 *    network devices merge by interface or device selector, VLANs by ID, admission plugins by name, extension
 *    config files by mount path, image verification rules are replaced by image pattern; CEL expressions and byte
 *    sizes always take the patch's value (so a patch that mentions their struct but not them clears them, as
 *    upstream); URLs merge per component.
 * Documents without a Go type (unknown kinds) merge by the map/list/scalar rules alone.
 */
import { absent, documentStruct, goStruct, isGoZero, type GoType } from "../encode/go-shape.js";
import type { MergeRule } from "../encode/go-types.js";
import { ConfigError } from "../errors.js";
import { formatPath, type PathSegment } from "../path.js";
import { deepClone, isPlainObject, type PlainObject } from "../tree.js";

const clone = <T>(v: T): T => (v === undefined ? v : deepClone(v));

function dynamicKind(v: unknown): string {
  if (Array.isArray(v)) return "list";
  if (isPlainObject(v)) return "map";
  return typeof v;
}

function mismatch(path: PathSegment[], l: unknown, r: unknown): never {
  throw new ConfigError(`${formatPath(path)}: cannot merge a ${dynamicKind(r)} from the patch into a ${dynamicKind(l)}`);
}

/** interface{} values (contents of unstructured maps): both sides must have the same kind, as in Go. */
function mergeDynamic(l: unknown, r: unknown, overwrite: boolean, path: PathSegment[]): unknown {
  if (absent(r)) return l;
  if (absent(l)) return clone(r);
  if (dynamicKind(l) !== dynamicKind(r)) mismatch(path, l, r);
  if (Array.isArray(l)) {
    const rl = r as unknown[];
    return [...l, ...clone(rl)];
  }
  if (isPlainObject(l)) {
    const out: PlainObject = { ...l };
    for (const [k, x] of Object.entries(r as PlainObject)) {
      if (x === undefined) continue;
      out[k] = absent(out[k]) ? clone(x) : mergeDynamic(out[k], x, false, [...path, k]);
    }
    return out;
  }
  if (typeof r === "boolean") return r;
  if (!overwrite && (r === "" || r === 0)) return l;
  return r;
}

/** A document that has no Go type: maps merge, lists append, zero scalars leave the old value alone. */
function mergePlain(l: unknown, r: unknown, path: PathSegment[]): unknown {
  if (absent(r)) return l;
  if (isPlainObject(l) && isPlainObject(r)) {
    const out: PlainObject = { ...l };
    for (const [k, x] of Object.entries(r)) if (x !== undefined) out[k] = mergePlain(out[k], x, [...path, k]);
    return out;
  }
  if (Array.isArray(l) && Array.isArray(r)) return [...l, ...clone(r)];
  if (!absent(l) && (r === "" || r === 0)) return l;
  return clone(r);
}

const str = (v: unknown) => (absent(v) ? "" : String(v));

/** Go's `==` on NetworkDeviceSelector: equal strings, and no `physical` on either (pointers compare by address). */
function sameSelector(a: unknown, b: unknown): boolean {
  if (!isPlainObject(a) || !isPlainObject(b)) return false;
  if (!absent(a.physical) || !absent(b.physical)) return false;
  return ["busPath", "hardwareAddr", "permanentAddr", "pciID", "driver"].every((k) => str(a[k]) === str(b[k]));
}

function listItemMatcher(rule: MergeRule, item: unknown): ((existing: unknown) => boolean) | undefined {
  const o = isPlainObject(item) ? item : {};
  switch (rule) {
    case "devices":
      if (str(o.interface) !== "") return (d) => isPlainObject(d) && str(d.interface) === str(o.interface);
      if (!absent(o.deviceSelector)) return (d) => isPlainObject(d) && !absent(d.deviceSelector) && sameSelector(d.deviceSelector, o.deviceSelector);
      return undefined;
    case "vlans":
      return (v) => isPlainObject(v) && Number(v.vlanId ?? 0) === Number(o.vlanId ?? 0);
    case "byName":
      return (c) => isPlainObject(c) && str(c.name) === str(o.name);
    case "byMountPath":
      return (c) => isPlainObject(c) && str(c.mountPath) === str(o.mountPath);
    default:
      return undefined;
  }
}

/** Lists whose Go type has its own Merge method (it runs even when the patch has no such list). */
function mergeList(rule: MergeRule, t: GoType, l: unknown, r: unknown, path: PathSegment[]): unknown {
  if (!Array.isArray(r)) return l;
  const out = Array.isArray(l) ? [...l] : [];
  const elem = t.k === "slice" ? t.elem : { k: "any" as const };
  if (rule === "imageRules") {
    // Matched against the rules as they were before this patch; a match is replaced, not merged.
    const byPattern = new Map<string, number>();
    out.forEach((x, i) => byPattern.set(str(isPlainObject(x) ? x.image : undefined), i));
    for (const item of r) {
      const i = byPattern.get(str(isPlainObject(item) ? item.image : undefined));
      if (i === undefined) out.push(clone(item));
      else out[i] = clone(item);
    }
    return out;
  }
  // Items behind pointers or values alike merge as Go's merge.Merge(existing, item) does.
  const itemType: GoType = elem.k === "ptr" ? elem : { k: "ptr", elem };
  for (const item of r) {
    const match = listItemMatcher(rule, item);
    const idx = match ? out.findIndex(match) : -1;
    if (idx < 0) out.push(clone(item));
    else out[idx] = merge(itemType, out[idx], item, false, false, undefined, [...path, idx]);
  }
  return out.length === 0 && !Array.isArray(l) ? l : out;
}

const URL_PARTS = /^(?:([A-Za-z][A-Za-z0-9+.-]*):)?(?:\/\/(?:([^/?#@]*)@)?([^/?#]*))?([^?#]*)(?:(\?)([^#]*))?(?:#(.*))?$/;

interface UrlParts {
  scheme: string;
  user?: string;
  host: string;
  path: string;
  forceQuery: boolean;
  query: string;
  fragment: string;
}

function urlParts(s: string): UrlParts | undefined {
  const m = URL_PARTS.exec(s);
  if (!m) return undefined;
  const query = m[6] ?? "";
  return { scheme: m[1] ?? "", user: m[2], host: m[3] ?? "", path: m[4], forceQuery: m[5] === "?" && query === "", query, fragment: m[7] ?? "" };
}

/**
 * url.URL merged field by field as upstream's reflection merge does: each non-empty part of the patch's URL
 * (scheme, host, path, query, fragment) replaces the old one, the old user info stays unless the patch has one,
 * and the result is written back as Go's URL.String() would.
 */
function mergeUrl(l: unknown, r: unknown): unknown {
  if (absent(r) || r === "") return l;
  if (absent(l) || l === "") return r;
  const a = urlParts(String(l));
  const b = urlParts(String(r));
  if (!a || !b) return r;
  const pick = (k: "scheme" | "host" | "path" | "query" | "fragment") => (b[k] !== "" ? b[k] : a[k]);
  const u: UrlParts = {
    scheme: pick("scheme"), user: b.user ?? a.user, host: pick("host"), path: pick("path"), forceQuery: b.forceQuery,
    query: pick("query"), fragment: pick("fragment"),
  };
  let out = u.scheme ? `${u.scheme}:` : "";
  if ((u.scheme || u.host || u.user !== undefined) && (u.host || u.path || u.user !== undefined)) {
    out += `//${u.user !== undefined ? u.user + "@" : ""}${u.host}`;
  }
  if (u.path && !u.path.startsWith("/") && u.host) out += "/";
  out += u.path;
  if (u.forceQuery || u.query) out += `?${u.query}`;
  if (u.fragment) out += `#${u.fragment}`;
  return out;
}

/** block.Size holds a byte size or a percentage, each merged by replacement; a byte size is written first. */
function mergeSize(l: unknown, r: unknown): unknown {
  const isBytes = (v: unknown) => !absent(v) && v !== "" && !String(v).includes("%");
  const isPercent = (v: unknown) => !absent(v) && v !== "" && String(v).includes("%");
  const bytes = isBytes(r) ? r : isBytes(l) ? l : undefined;
  return bytes ?? (isPercent(r) ? r : isPercent(l) ? l : l);
}

function mergeFields(name: string, l: unknown, r: unknown, path: PathSegment[]): PlainObject {
  const st = goStruct(name);
  const lo = isPlainObject(l) ? l : {};
  const ro = isPlainObject(r) ? r : {};
  const out: PlainObject = { ...lo };
  for (const f of st.fields) {
    const v = merge(f.type, lo[f.key], ro[f.key], f.merge === "replace", false, f.merge, [...path, f.key]);
    if (v === undefined) delete out[f.key];
    else out[f.key] = v;
  }
  // Keys the Go type does not have (documents kept without type-checking).
  for (const [k, x] of Object.entries(ro)) if (!st.keys.has(k) && x !== undefined) out[k] = mergePlain(out[k], x, [...path, k]);
  return out;
}

function merge(t: GoType, l: unknown, r: unknown, replace: boolean, overwrite: boolean, rule: MergeRule | undefined, path: PathSegment[]): unknown {
  if (rule && rule !== "replace") return mergeList(rule, t, l, r, path);
  switch (t.k) {
    case "ptr":
      if (absent(r)) return l;
      if (absent(l)) return clone(r);
      return merge(t.elem, l, r, replace, true, undefined, path);
    case "any":
      return mergeDynamic(l, r, true, path);
    case "slice":
      if (absent(r)) return l;
      if (!Array.isArray(r) || replace) return clone(r);
      if (!Array.isArray(l)) return clone(r);
      return [...l, ...clone(r)];
    case "map": {
      if (absent(r)) return l;
      if (replace || !isPlainObject(r)) return clone(r);
      const out: PlainObject = isPlainObject(l) ? { ...l } : {};
      const nilable = ["ptr", "any", "slice", "map", "args", "hwaddr", "b64"].includes(t.elem.k);
      for (const [k, x] of Object.entries(r)) {
        if (x === undefined) continue;
        const had = k in out && out[k] !== undefined && !(nilable && out[k] === null);
        out[k] = had ? merge(t.elem, out[k], x, false, false, undefined, [...path, k]) : clone(x);
      }
      return out;
    }
    case "unstructured":
      if (replace) return absent(r) ? l : clone(r);
      if (absent(r)) return l;
      return mergeDynamic(isPlainObject(l) ? l : {}, r, false, path);
    case "struct":
      if (replace) return isGoZero(t, r) ? l : clone(r);
      if (absent(r) && absent(l)) return l;
      return mergeFields(t.name, l, r, path);
    case "args":
      // meta.Args: each flag of the patch replaces the old one (maps.Copy).
      if (!isPlainObject(r) || Object.keys(r).length === 0) return l;
      return { ...(isPlainObject(l) ? l : {}), ...clone(r) };
    case "cel": case "bytesize":
      // Their Merge methods copy the patch's value, even an empty one.
      return clone(r);
    case "ipwrap": case "netip":
      return absent(r) || r === "" ? l : r;
    case "size":
      return mergeSize(l, r);
    case "hwaddr": case "b64":
      return absent(r) ? l : r;
    case "certkey": case "cert": case "key": {
      // Their YAML decoding turns a missing part into an empty, non-nil byte slice, and byte slices are replaced
      // whenever non-nil: the patch's value replaces every part, so `ca: {key: ...}` clears the certificate.
      if (!isPlainObject(r)) return absent(r) ? l : r;
      const parts = t.k === "certkey" ? ["crt", "key"] : t.k === "cert" ? ["crt"] : ["key"];
      return Object.fromEntries(parts.map((k) => [k, absent(r[k]) ? "" : r[k]]));
    }
    case "url": case "endpoint":
      return mergeUrl(l, r);
    case "sizematcher":
      if (absent(r)) return l;
      if (absent(l)) return r;
      // Upstream cannot merge two disk size conditions (a field it cannot set) and fails the patch.
      throw new ConfigError(`${formatPath(path)}: upstream cannot merge a disk size condition into an existing one; delete it first ($patch: delete)`);
    case "portrange": {
      if (absent(r)) return l;
      return r;
    }
    case "bool":
      // Booleans always take the patch's value; one the patch leaves out (or null) is Go's false.
      return absent(r) ? (l === undefined ? undefined : false) : r;
    default:
      // Scalars: Go's zero value leaves the old one alone unless it came through a pointer.
      if (absent(r)) return l;
      if (!overwrite && isGoZero(t, r)) return l;
      return r;
  }
}

/** Merges patch document `right` into config document `left` (both plain trees; neither is modified). */
export function mergeDocument(id: { kind: string; apiVersion: string }, left: PlainObject, right: PlainObject): PlainObject {
  const type = documentStruct(id.kind, id.apiVersion);
  if (!type) return mergePlain(left, right, []) as PlainObject;
  return mergeFields(type, left, right, []);
}
