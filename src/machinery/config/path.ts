/**
 * YAML path helpers. A path is a list of map keys and list indexes; it prints as `a.b[0].c`.
 * Keys that would be ambiguous in dotted form (dots, brackets, spaces) print quoted: `sysctls["net.ipv4.ip_forward"]`.
 */

export type PathSegment = string | number;

const plainKey = /^[A-Za-z0-9_$/-]+$/;

export function formatPath(path: readonly PathSegment[]): string {
  let out = "";
  for (const seg of path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else if (plainKey.test(seg)) out += out === "" ? seg : `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out;
}

export function joinPath(base: string, seg: PathSegment): string {
  const tail = formatPath([seg]);
  return base === "" || tail.startsWith("[") ? base + tail : `${base}.${tail}`;
}

/** Reads the value at `path` in a plain JS tree; undefined when any step is missing. */
export function valueAt(root: unknown, path: readonly PathSegment[]): unknown {
  let cur: unknown = root;
  for (const seg of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string | number, unknown>)[seg];
  }
  return cur;
}

/** Short description of a value for messages: `string "abc"`, `number 12`, `map`, `list`, `null`. */
export function describeValue(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (Array.isArray(v)) return "list";
  switch (typeof v) {
    case "string":
      // Values are echoed in error texts, which must stay short.
      return v.length > 80 ? `string ${JSON.stringify(v.slice(0, 80))}… (${v.length} characters)` : `string ${JSON.stringify(v)}`;
    case "number":
    case "bigint":
      return `number ${String(v)}`;
    case "boolean":
      return `boolean ${String(v)}`;
    case "object":
      return "map";
    default:
      return typeof v;
  }
}
