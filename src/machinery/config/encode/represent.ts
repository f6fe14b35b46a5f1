/**
 * Turns a config document (plain data as decoded from YAML) into the node tree Talos' Go encoder would write for
 * it: the document is read as its Go type would read it (go-types.ts), then written in the type's field order with
 * go-yaml's rules — a field with omitempty is left out when zero, one without is always written (`type: ""`,
 * `certSANs: []`, `cluster: null`), maps are written with sorted keys, and strings get the quotes go-yaml gives
 * them (`""`, `'yes'`, `"1234"`; literal blocks for multi-line text).
 *
 * Keys a Go type does not have (possible only in documents this loader keeps without type-checking) are kept,
 * after the known ones, rather than dropped.
 */
import { isPlainObject, type PlainObject } from "../tree.js";
import { NULL, scalar, type YNode } from "./emitter.js";
import { absent, documentStruct, goStruct, isEmptyValue, type GoType } from "./go-shape.js";
import { formatGoDuration, goBool, humanBytes, parseBytes, parseGoDuration, parsePortRange } from "./go-values.js";
import { goFloat, goInt, isBase60Float, isOldBool, resolvePlain, sortKeys } from "./scalar.js";

// Go's unicode.IsSpace.
const GO_SPACE = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/;

/** A Go string as go-yaml's representer writes it. */
export function goString(s: string): YNode {
  if (s.includes("\n")) return scalar(s, s.length >= 2 && !GO_SPACE.test(s) ? "literal" : "double");
  if (isOldBool(s) || isBase60Float(s) || s === "<<") return scalar(s, "single");
  return scalar(s, resolvePlain(s, "v4") === "str" ? "plain" : "double");
}

/** A string that a Go marshaler returns as a ready-made `!!str` node (no YAML 1.1 quoting, any newline literal). */
function nodeString(s: string): YNode {
  if (resolvePlain(s, "v4") !== "str") return scalar(s, "double");
  return scalar(s, s.includes("\n") ? "literal" : "plain");
}

function goNumber(n: number): YNode {
  return scalar(Number.isInteger(n) && n >= -(2 ** 63) && n < 2 ** 64 ? goInt(n) : goFloat(n));
}

/** A scalar read into a Go string field: go-yaml takes any scalar there. */
function asString(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return absent(v) ? "" : undefined;
}

/** interface{} values and the contents of unstructured maps: maps with sorted keys. */
export function anyNode(v: unknown): YNode {
  if (absent(v)) return NULL;
  if (typeof v === "string") return goString(v);
  if (typeof v === "boolean") return scalar(v ? "true" : "false");
  if (typeof v === "number") return goNumber(v);
  if (Array.isArray(v)) return { kind: "seq", items: v.map(anyNode) };
  if (isPlainObject(v)) {
    const keys = sortKeys(Object.keys(v).filter((k) => v[k] !== undefined), "v4");
    return { kind: "map", entries: keys.map((k) => [goString(k), anyNode(v[k])]) };
  }
  return goString(String(v));
}

function structNode(name: string, v: unknown): YNode {
  if (!absent(v) && !isPlainObject(v)) return anyNode(v);
  const obj: PlainObject = isPlainObject(v) ? v : {};
  const st = goStruct(name);
  const entries: [YNode, YNode][] = [];
  for (const f of st.fields) {
    const x = obj[f.key];
    if (f.omitempty && isEmptyValue(f.type, x)) continue;
    entries.push([goString(f.key), represent(f.type, x)]);
  }
  for (const [k, x] of Object.entries(obj)) {
    if (!st.keys.has(k) && x !== undefined) entries.push([goString(k), anyNode(x)]);
  }
  return { kind: "map", entries };
}

function pemPair(v: unknown, keys: readonly string[]): YNode {
  const obj = isPlainObject(v) ? v : {};
  return { kind: "map", entries: keys.map((k) => [goString(k), goString(asString(obj[k]) ?? "")]) };
}

function argValue(v: unknown): YNode {
  if (Array.isArray(v)) return { kind: "seq", items: v.map((x) => nodeString(asString(x) ?? String(x))) };
  const s = asString(v);
  if (s === undefined) return anyNode(v);
  // An empty flag value marshals to nothing at all: `null`.
  return s === "" ? NULL : nodeString(s);
}

function represent(t: GoType, v: unknown): YNode {
  switch (t.k) {
    case "ptr":
      return absent(v) ? NULL : represent(t.elem, v);
    case "slice":
      if (absent(v)) return { kind: "seq", items: [] };
      return Array.isArray(v) ? { kind: "seq", items: v.map((x) => represent(t.elem, x)) } : anyNode(v);
    case "map": {
      if (absent(v)) return { kind: "map", entries: [] };
      if (!isPlainObject(v)) return anyNode(v);
      const keys = sortKeys(Object.keys(v).filter((k) => v[k] !== undefined), "v4");
      return { kind: "map", entries: keys.map((k) => [goString(k), represent(t.elem, v[k])]) };
    }
    case "struct":
      return structNode(t.name, v);
    case "str": case "b64": case "url": case "endpoint":
    case "cel": case "bytesize": case "size": case "ipwrap": case "netip": case "hwaddr": {
      const s = asString(v);
      return s === undefined ? anyNode(v) : goString(s);
    }
    case "sizematcher": {
      const s = asString(v);
      return s === undefined ? anyNode(v) : goString(s.trim());
    }
    case "enum": {
      if (absent(v)) return goString(t.zero);
      const s = asString(v);
      return s === undefined ? anyNode(v) : goString(s);
    }
    case "bool": {
      const b = absent(v) ? false : goBool(v);
      return b === undefined ? anyNode(v) : scalar(b ? "true" : "false");
    }
    case "int": case "uint": case "float":
      if (absent(v)) return scalar("0");
      return typeof v === "number" ? goNumber(v) : anyNode(v);
    case "any":
      return anyNode(v);
    case "unstructured":
      return absent(v) ? { kind: "map", entries: [] } : anyNode(v);
    case "args": {
      if (absent(v)) return { kind: "map", entries: [] };
      if (!isPlainObject(v)) return anyNode(v);
      const keys = sortKeys(Object.keys(v).filter((k) => v[k] !== undefined), "v4");
      return { kind: "map", entries: keys.map((k) => [goString(k), argValue(v[k])]) };
    }
    case "certkey":
      return pemPair(v, ["crt", "key"]);
    case "cert":
      return pemPair(v, ["crt"]);
    case "key":
      return pemPair(v, ["key"]);
    case "duration": {
      const ns = absent(v) ? 0n : typeof v === "number" && Number.isInteger(v) ? BigInt(v) : typeof v === "string" ? parseGoDuration(v) : undefined;
      return ns === undefined ? anyNode(v) : goString(formatGoDuration(ns));
    }
    case "filemode":
      if (absent(v)) return scalar("0o0");
      return typeof v === "number" && Number.isInteger(v) && v >= 0 ? scalar("0o" + v.toString(8)) : anyNode(v);
    case "disksize": {
      const n = absent(v) ? 0 : typeof v === "number" ? v : typeof v === "string" ? parseBytes(v) : undefined;
      if (n === undefined || !Number.isInteger(n) || n < 0) return anyNode(v);
      // Written in SI units when that spelling reads back as the same number of bytes, else as a number.
      if (n % 1000 === 0) {
        const h = humanBytes(n);
        if (parseBytes(h) === n) return goString(h);
      }
      return scalar(goInt(n));
    }
    case "portrange": {
      const r = parsePortRange(v ?? 0);
      if (!r) return anyNode(v);
      return r[0] === r[1] ? scalar(String(r[0])) : goString(`${r[0]}-${r[1]}`);
    }
  }
}

/** Documents without a Go type (unknown kinds): written in their own key order, as they were decoded. */
function plainNode(v: unknown): YNode {
  if (Array.isArray(v)) return { kind: "seq", items: v.map(plainNode) };
  if (isPlainObject(v)) {
    return { kind: "map", entries: Object.entries(v).filter(([, x]) => x !== undefined).map(([k, x]) => [goString(k), plainNode(x)]) };
  }
  return anyNode(v);
}

/** A document as the Go encoder writes it (documents without a Go type in their own key order). */
export function documentNode(kind: string, apiVersion: string, data: PlainObject): YNode {
  const type = documentStruct(kind, apiVersion);
  return type ? structNode(type, data) : plainNode(data);
}
