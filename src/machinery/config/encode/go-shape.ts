/**
 * The Go type table (go-types.ts) parsed into a form code can walk: a document's Go type, each struct's fields
 * (inlined structs expanded in place) with their types and merge rules, and Go's two notions of "zero" — the one
 * `omitempty` asks (IsZero methods where a type has one) and reflection's (what the merge asks).
 */
import { isPlainObject } from "../tree.js";
import { DOCUMENT_TYPES, FIELD_MERGE, STRUCTS, ZERO_WHEN, type MergeRule } from "./go-types.js";
import { goBool, parseBytes, parseGoDuration, parsePortRange } from "./go-values.js";

/** Values written as text; they differ only in how they merge. */
export const TEXT_LEAVES = ["cel", "bytesize", "size", "ipwrap", "netip", "hwaddr"] as const;

export type Leaf =
  | "str" | "bool" | "int" | "uint" | "float" | "any" | "duration" | "args" | "unstructured"
  | (typeof TEXT_LEAVES)[number]
  | "certkey" | "cert" | "key" | "b64" | "url" | "endpoint" | "filemode" | "disksize" | "sizematcher" | "portrange";

export type GoType =
  | { k: Leaf }
  | { k: "enum"; zero: string }
  | { k: "ptr" | "slice" | "map"; elem: GoType }
  | { k: "struct"; name: string };

export interface Field {
  key: string;
  type: GoType;
  omitempty: boolean;
  merge?: MergeRule;
}

export interface Struct {
  name: string;
  fields: Field[];
  keys: Set<string>;
}

const LEAVES = new Set<string>([
  "str", "bool", "int", "uint", "float", "any", "duration", "args", "unstructured", ...TEXT_LEAVES,
  "certkey", "cert", "key", "b64", "url", "endpoint", "filemode", "disksize", "sizematcher", "portrange",
]);

function parseType(s: string): GoType {
  if (s.startsWith("*")) return { k: "ptr", elem: parseType(s.slice(1)) };
  if (s.startsWith("[]")) return { k: "slice", elem: parseType(s.slice(2)) };
  if (s.startsWith("{}")) return { k: "map", elem: parseType(s.slice(2)) };
  const e = /^enum\((.*)\)$/.exec(s);
  if (e) return { k: "enum", zero: e[1] };
  if (LEAVES.has(s)) return { k: s as Leaf };
  if (!(s in STRUCTS)) throw new Error(`go-types: unknown type ${s}`);
  return { k: "struct", name: s };
}

const parsed = new Map<string, Struct>();

/** A struct of the table (parsed on first use). */
export function goStruct(name: string): Struct {
  let st = parsed.get(name);
  if (st) return st;
  const fields: Field[] = [];
  for (const spec of STRUCTS[name]) {
    if (spec.startsWith("...")) {
      fields.push(...goStruct(spec.slice(3)).fields);
      continue;
    }
    const colon = spec.indexOf(":");
    const omitempty = spec[colon - 1] === "?";
    const key = spec.slice(0, omitempty ? colon - 1 : colon);
    fields.push({ key, type: parseType(spec.slice(colon + 1)), omitempty, merge: FIELD_MERGE[`${name}.${key}`] });
  }
  st = { name, fields, keys: new Set(fields.map((f) => f.key)) };
  parsed.set(name, st);
  return st;
}

/** The Go struct of a document: `v1alpha1` for the legacy document, else its kind (apiVersion v1alpha1 only). */
export function documentStruct(kind: string, apiVersion: string): string | undefined {
  if (kind === "v1alpha1") return DOCUMENT_TYPES.v1alpha1;
  return apiVersion === "v1alpha1" ? DOCUMENT_TYPES[kind] : undefined;
}

export const absent = (v: unknown): v is null | undefined => v === undefined || v === null;

/** What `omitempty` asks: go-yaml's isZero, which uses a type's IsZero method when it has one. */
export function isEmptyValue(t: GoType, v: unknown): boolean {
  if (absent(v)) return true;
  switch (t.k) {
    case "ptr": case "any": case "certkey": case "cert": case "key": case "endpoint": case "sizematcher":
      return false;
    case "slice":
      return Array.isArray(v) && v.length === 0;
    case "map": case "args": case "unstructured":
      return isPlainObject(v) && Object.values(v).every((x) => x === undefined);
    case "str": case "b64": case "url": case "cel": case "bytesize": case "size": case "ipwrap": case "netip": case "hwaddr":
      return v === "";
    case "bool":
      return goBool(v) === false;
    case "int": case "uint": case "float": case "filemode":
      return v === 0;
    case "disksize":
      return v === 0 || (typeof v === "string" && parseBytes(v) === 0);
    case "enum":
      return v === 0 || (typeof v === "string" && v.toLowerCase() === t.zero.toLowerCase());
    case "duration":
      return (typeof v === "number" ? BigInt(Math.trunc(v)) : typeof v === "string" ? parseGoDuration(v) : undefined) === 0n;
    case "portrange": {
      const r = parsePortRange(v);
      return r !== undefined && r[0] === 0 && r[1] === 0;
    }
    case "struct": {
      if (!isPlainObject(v)) return false;
      const only = ZERO_WHEN[t.name];
      return goStruct(t.name).fields.every((f) => (only && !only.includes(f.key)) || isEmptyValue(f.type, v[f.key]));
    }
  }
}

/**
 * What the merge asks (reflect.Value.IsZero): nil pointers, slices, maps and interfaces, zero scalars, and structs
 * whose fields all are. Unlike omitempty, an empty but present list or map (`[]`, `{}`) is not zero.
 */
export function isGoZero(t: GoType, v: unknown): boolean {
  if (absent(v)) return true;
  switch (t.k) {
    case "ptr": case "any": case "slice": case "map": case "args": case "unstructured": case "hwaddr": case "b64":
    case "certkey": case "cert": case "key": case "endpoint": case "sizematcher":
      return false;
    case "struct":
      return isPlainObject(v) && goStruct(t.name).fields.every((f) => isGoZero(f.type, v[f.key]));
    default:
      return isEmptyValue(t, v);
  }
}
