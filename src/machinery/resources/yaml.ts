/**
 * `yaml_spec` text for a YAML-shaped spec, laid out like Go's yaml.v3 `Marshal` (what COSI uses):
 * 4-space indentation with indented sequences, keys in insertion order, no line folding, literal
 * blocks for multi-line strings, and the same quoting decisions — double quotes for strings that would
 * otherwise read back as another type (including YAML 1.1 booleans such as `yes`/`on`), single quotes
 * only when a plain scalar is impossible. talosctl re-parses this text, so the layout is cosmetic but
 * the scalar types must survive the round trip.
 */
import { Document, isScalar, Scalar, visit } from "yaml";

/**
 * Go-compatible YAML of a spec. The common shapes (maps, lists and one-line scalars) are written directly,
 * ten times faster than building a YAML document; anything else (multi-line text, Maps, keys or strings
 * that need more than the simple quoting rules) goes through the `yaml` document model, and the two agree
 * wherever the direct writer answers (test/machinery/resources/yaml.test.ts compares them).
 */
export function specToYaml(spec: unknown): string {
  return directYaml(spec) ?? documentYaml(spec);
}

/** The `yaml`-document path, for every spec. */
export function documentYaml(spec: unknown): string {
  // A whole-document multi-line string (MachineConfig's spec) is written as Go does: an indented literal
  // block. The yaml package would leave the block unindented, which not every parser accepts.
  if (typeof spec === "string" && spec.includes("\n") && literalSafe(spec)) return rootLiteral(spec);
  const doc = new Document(normalize(spec), { keepSourceTokens: false });
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value !== "string") return;
      const s = node.value;
      if (isTime(node)) node.type = Scalar.PLAIN;
      else if (s.includes("\n")) node.type = literalSafe(s) ? Scalar.BLOCK_LITERAL : Scalar.QUOTE_DOUBLE;
      else if (readsAsOtherType(s) || /[\t\u0000-\u001f\u007f]/.test(s)) node.type = Scalar.QUOTE_DOUBLE;
    },
  });
  return doc.toString({
    indent: 4,
    indentSeq: true,
    lineWidth: 0,
    minContentWidth: 0,
    singleQuote: true,
    blockQuote: "literal",
    nullStr: "null",
  });
}

const TIME = Symbol("time");

/** Literal blocks cannot carry trailing blanks on a line or control characters; Go double-quotes those. */
function literalSafe(s: string): boolean {
  return !/[ \t]\n|[ \t]$/.test(s) && !/[\u0000-\u0008\u000b-\u001f\u007f]/.test(s);
}

function rootLiteral(s: string): string {
  const trailing = /\n*$/.exec(s)![0].length;
  const chomp = trailing === 0 ? "-" : trailing === 1 ? "" : "+";
  // An explicit indentation indicator is needed when the first line itself starts with a space.
  const indicator = s.startsWith(" ") ? "4" : "";
  const body = s.slice(0, s.length - trailing);
  const lines = body.split("\n").map((l) => (l === "" ? "" : `    ${l}`));
  return `|${indicator}${chomp}\n${lines.join("\n")}\n${"\n".repeat(Math.max(0, trailing - 1))}`;
}

/** Dates become RFC 3339 text (marked so they stay unquoted, as Go prints time.Time); bytes a list of numbers, as Go prints []byte. */
function normalize(v: unknown): unknown {
  if (v instanceof Date) {
    const s = new Scalar(rfc3339(v));
    (s as unknown as Record<symbol, boolean>)[TIME] = true;
    return s;
  }
  if (v instanceof Uint8Array) return Array.from(v);
  if (Array.isArray(v)) return v.map(normalize);
  if (v instanceof Map) return new Map([...v].map(([k, x]) => [k, normalize(x)]));
  if (typeof v === "object" && v !== null && !isScalar(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = normalize(x);
    return out;
  }
  return v;
}

function isTime(node: Scalar): boolean {
  return (node as unknown as Record<symbol, boolean>)[TIME] === true;
}

/** Go's RFC3339Nano: fractional seconds only when non-zero, trailing zeros trimmed. */
function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.(\d*?)0*Z$/, (_m, frac: string) => (frac ? `.${frac}Z` : "Z"));
}

/** Strings yaml.v3 would resolve to a non-string (so it quotes them), covering YAML 1.1 forms too. */
const OTHER_TYPES = [
  /^$/,
  /^(~|null|Null|NULL)$/,
  /^(y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$/,
  /^[-+]?(0|[1-9][0-9_]*)$/,
  /^[-+]?0b[01_]+$/,
  /^[-+]?0o?[0-7_]+$/,
  /^[-+]?0x[0-9a-fA-F_]+$/,
  /^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$/,
  /^[-+]?\.(inf|Inf|INF)$/,
  /^\.(nan|NaN|NAN)$/,
  /^[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$/, // YAML 1.1 base-60
  /^\d{4}-\d\d?-\d\d?([Tt ]|$)/, // timestamps
  /^<<$/,
];

function readsAsOtherType(s: string): boolean {
  return OTHER_TYPES.some((re) => re.test(s));
}

// ---------------------------------------------------------------------------------------- direct writer

/** The `yaml` package's own test for a string that cannot be written as a plain scalar. */
const NOT_PLAIN = /^[\n\t ,[\]{}#&*!|>'"%@`]|^[?-]$|^[?-][ \t]|[\n:][ \t]|[ \t]\n|[\n\t ]#|[\n\t :]$/;
const DOC_MARKER = /^(%|---|\.\.\.)/;
const PRINTABLE = /^[\x20-\x7e]*$/;
const SIMPLE_KEY = /^[A-Za-z_][A-Za-z0-9_.\/-]*$/;

class Bail extends Error {}
const bail = (): never => {
  throw new Bail();
};

/** The text of a one-line scalar, quoted as yaml.v3 would; bails out on anything unusual. */
function scalarText(v: unknown): string {
  if (v === null) return "null";
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "bigint") return String(v);
  if (typeof v === "number") {
    if (Object.is(v, -0) || !Number.isFinite(v)) return bail();
    const t = String(v);
    return /^-?\d+(\.\d+)?$/.test(t) ? t : bail();
  }
  if (v instanceof Date) return rfc3339(v);
  if (typeof v !== "string") return bail();
  if (!PRINTABLE.test(v) || DOC_MARKER.test(v)) return bail();
  if (readsAsOtherType(v)) return v.includes('"') || v.includes("\\") ? bail() : `"${v}"`;
  if (!NOT_PLAIN.test(v)) return v;
  // Plain is impossible: single quotes, unless a quote inside makes yaml choose double quotes.
  return v.includes("'") ? bail() : `'${v}'`;
}

function keyText(k: string): string {
  return SIMPLE_KEY.test(k) && !readsAsOtherType(k) && k.length < 1000 ? k : bail();
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype;

/** How a value is laid out: a block list, a block map, or a one-line scalar. */
function kindOf(v: unknown): "list" | "map" | "scalar" {
  if (Array.isArray(v) || v instanceof Uint8Array) return "list";
  if (isPlainObject(v)) return "map";
  return "scalar";
}

function writeMap(obj: Record<string, unknown>, indent: number, out: string[]): void {
  const pad = " ".repeat(indent);
  for (const key of Object.keys(obj)) {
    const v = obj[key];
    if (v === undefined) continue;
    const k = keyText(key);
    const kind = kindOf(v);
    if (kind === "scalar") out.push(`${pad}${k}: ${scalarText(v)}`);
    else if (kind === "list") {
      const list = v as ArrayLike<unknown>;
      if (list.length === 0) out.push(`${pad}${k}: []`);
      else {
        out.push(`${pad}${k}:`);
        writeList(list, indent + 4, out);
      }
    } else if (Object.values(v as object).every((x) => x === undefined)) out.push(`${pad}${k}: {}`);
    else {
      out.push(`${pad}${k}:`);
      writeMap(v as Record<string, unknown>, indent + 4, out);
    }
  }
}

function writeList(list: ArrayLike<unknown>, indent: number, out: string[]): void {
  const pad = " ".repeat(indent);
  for (let i = 0; i < list.length; i++) {
    const v = list[i];
    if (v === undefined) bail();
    const kind = kindOf(v);
    if (kind === "scalar") out.push(`${pad}- ${scalarText(v)}`);
    else if (kind === "list") {
      if ((v as ArrayLike<unknown>).length === 0) out.push(`${pad}- []`);
      else bail();
    } else if (Object.values(v as object).every((x) => x === undefined)) out.push(`${pad}- {}`);
    else {
      const start = out.length;
      writeMap(v as Record<string, unknown>, indent + 2, out);
      out[start] = `${pad}- ${out[start].slice(indent + 2)}`;
    }
  }
}

/** The direct writer: a non-empty object root only; undefined when the spec needs the document model. */
export function directYaml(spec: unknown): string | undefined {
  if (!isPlainObject(spec)) return undefined;
  const out: string[] = [];
  try {
    writeMap(spec, 0, out);
  } catch (err) {
    if (err instanceof Bail) return undefined;
    throw err;
  }
  return out.length ? `${out.join("\n")}\n` : undefined;
}
