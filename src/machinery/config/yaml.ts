/**
 * YAML reading and writing tuned to behave like the Go decoder talosctl and Talos use (go-yaml v3):
 * duplicate keys are errors, `0644` is octal (Go parses ints with base 0), merge keys work, and output uses
 * 4-space indentation without line folding, like the Go encoder.
 *
 * Reading is bounded and linear in the input (see limits.ts): the text is checked for encoding first, the concrete
 * syntax tree for nesting depth before the (recursive) composer sees it, and the composed tree for duplicate keys,
 * key and string sizes, anchors, aliases and the size the tree would have once aliases are expanded — all before
 * anything is converted to plain JS. The `yaml` package's own duplicate-key check compares each key with every
 * earlier one (quadratic), and its alias guard counts aliases, not the size they expand to, so both are done here.
 */
import {
  Composer,
  isAlias,
  isMap,
  isScalar,
  isSeq,
  Lexer,
  LineCounter,
  Parser,
  stringify,
  type CST,
  type Document,
  type Node as YamlNode,
  type ScalarTag,
} from "yaml";
import { ConfigError, type ConfigIssue } from "./errors.js";
import { clip, formatBytes, LIMITS } from "./limits.js";
import { goInteger, resolvePlain } from "./encode/scalar.js";
import { formatPath, type PathSegment } from "./path.js";

/** Go's strconv base-0 parsing reads a leading 0 as octal; YAML 1.2 core would read it as decimal. */
const goOctal: ScalarTag = {
  default: true,
  tag: "tag:yaml.org,2002:int",
  test: /^[-+]?0[0-7]+$/,
  resolve: (s: string) => {
    const neg = s.startsWith("-");
    const n = parseInt(s.replace(/^[-+]/, ""), 8);
    return neg ? -n : n;
  },
};

const parseOptions = {
  customTags: (tags: unknown[]) => [goOctal, ...tags] as never,
  merge: true,
  // Checked by checkTree below in linear time (the package compares every key with every earlier one).
  uniqueKeys: false,
} as const;

/** A plain scalar as gopkg.in/yaml.v2 reads it into interface{}; timestamps stay strings there. */
function yamlV2Scalar(s: string): unknown {
  switch (resolvePlain(s, "v2")) {
    case "null":
      return null;
    case "bool":
      return ["y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"].includes(s);
    case "int":
      return Number(goInteger(s.replaceAll("_", "")));
    case "float": {
      const l = s.toLowerCase();
      if (l === ".nan") return NaN;
      if (l.endsWith(".inf")) return l.startsWith("-") ? -Infinity : Infinity;
      return Number(s.startsWith(".") ? s : s.replaceAll("_", ""));
    }
    default:
      return s;
  }
}

// Plain scalars that yaml.v2 may read as something else than a string all start with one of these; the resolver
// above decides (and keeps the text when it is a string after all).
const yamlV2Tag: ScalarTag = {
  default: true,
  tag: "tag:yaml.org,2002:int",
  test: /^(?:[-+.0-9~yYnNtTfFoO].*)?$/s,
  resolve: yamlV2Scalar,
};

/** What a JSON patch sees (upstream converts the config to JSON with ghodss/yaml, i.e. yaml.v2). */
const yamlV2ParseOptions = { ...parseOptions, customTags: (tags: unknown[]) => [yamlV2Tag, ...tags] as never } as const;

export interface ParseOptions {
  /** "v2": read plain scalars as yaml.v2 does (YAML 1.1 booleans such as `yes`, Go's integer syntax). */
  dialect?: "v2";
}

export interface YamlDoc {
  /** The document as plain JS (null for an empty document). */
  value: unknown;
  /** The parsed document, kept to map a path back to a source position. */
  doc: Document.Parsed;
  /** 1-based line where the document content starts. */
  line: number;
}

export interface YamlStream {
  docs: YamlDoc[];
  lines: LineCounter;
}

/** Work done by the checks below (nodes and keys visited); tests compare it across input sizes to prove linearity. */
export const yamlWork = { steps: 0 };

const BOMS: [number[], string][] = [
  [[0x00, 0x00, 0xfe, 0xff], "UTF-32 (big-endian byte order mark)"],
  [[0xff, 0xfe, 0x00, 0x00], "UTF-32 (little-endian byte order mark)"],
  [[0xfe, 0xff], "UTF-16 (big-endian byte order mark)"],
  [[0xff, 0xfe], "UTF-16 (little-endian byte order mark)"],
];

function sizeError(size: number): ConfigError {
  return new ConfigError(`config is ${formatBytes(size)}, more than the ${formatBytes(LIMITS.configBytes)} a machine config may be`);
}

/**
 * Bytes (or text) to config text: refuses at once anything over the size bound and anything that is not UTF-8
 * text YAML allows (UTF-16/32, NUL bytes, invalid sequences, control characters), with a short message.
 */
export function decodeText(input: string | Uint8Array): string {
  if (typeof input !== "string") {
    if (input.byteLength > LIMITS.configBytes) throw sizeError(input.byteLength);
    for (const [bom, what] of BOMS) {
      if (bom.every((b, i) => input[i] === b)) throw new ConfigError(`config is encoded as ${what}; only UTF-8 is accepted`);
    }
    const nul = input.indexOf(0);
    if (nul >= 0) {
      throw new ConfigError(`config contains a NUL byte at offset ${nul}; only UTF-8 text is accepted (is it UTF-16 or binary?)`);
    }
  } else if (input.length > LIMITS.configBytes || (input.length * 3 > LIMITS.configBytes && Buffer.byteLength(input) > LIMITS.configBytes)) {
    throw sizeError(Buffer.byteLength(input));
  }
  let text: string;
  if (typeof input === "string") text = input;
  else {
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(input);
    } catch {
      throw new ConfigError("config is not valid UTF-8 text");
    }
  }
  checkCharacters(text);
  return text;
}

// YAML's printable set (1.2 §5.1), which go-yaml enforces: no C0 controls but tab/LF/CR, no DEL, no C1 but NEL,
// no lone surrogates, no U+FFFE/U+FFFF. A leading byte order mark is fine.
const NOT_PRINTABLE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u0084\u0086-\u009F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function checkCharacters(text: string): void {
  const m = NOT_PRINTABLE.exec(text);
  if (!m) return;
  const before = text.slice(0, m.index);
  const line = before.split("\n").length;
  const column = m.index - before.lastIndexOf("\n");
  const code = m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0");
  const what = code === "0000" ? "a NUL character (is it UTF-16 or binary?)" : `the control character U+${code}`;
  throw new ConfigError([{ path: "", message: `config contains ${what} at line ${line}, column ${column}; YAML allows only printable characters`, line, column }]);
}

function errorAt(lines: LineCounter, offset: number, message: string, path = ""): ConfigError {
  const pos = lines.linePos(offset);
  const where = `line ${pos.line}, column ${pos.col}`;
  const issue: ConfigIssue = {
    path,
    message: path === "" ? `${message} (${where})` : `${clip(path, 200)}: ${message} (${where})`,
    line: pos.line,
    column: pos.col,
  };
  return new ConfigError([issue]);
}

/** Parses every document of a YAML stream; the first syntax error becomes a ConfigError with line/column. */
export function parseYamlStream(text: string, options: ParseOptions = {}): YamlStream {
  if (text.length > LIMITS.configBytes) throw sizeError(Buffer.byteLength(text));
  const lines = new LineCounter();
  const tokens = syntaxTree(text, lines);
  checkSyntaxTree(tokens, lines);
  const composer = new Composer(options.dialect === "v2" ? yamlV2ParseOptions : parseOptions);
  const parsed = Array.from(composer.compose(tokens)) as Document.Parsed[];
  const docs: YamlDoc[] = [];
  const budget = { nodes: LIMITS.nodes, bytes: 2 * LIMITS.configBytes, aliases: LIMITS.aliases, anchors: LIMITS.anchors };
  for (const doc of parsed) {
    const err = doc.errors[0];
    if (err) {
      const pos = lines.linePos(err.pos[0]);
      const reason = clip(err.message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, ""), 200);
      throw new ConfigError([
        { path: "", message: `malformed YAML at line ${pos.line}, column ${pos.col}: ${reason}`, line: pos.line, column: pos.col },
      ]);
    }
    checkTree(doc, lines, budget);
    const start = doc.contents?.range?.[0] ?? doc.range[0];
    let value: unknown;
    try {
      // Aliases were bounded by checkTree (by expanded size, which the package's own count does not measure).
      value = doc.toJS({ maxAliasCount: -1 }) ?? null;
    } catch (e) {
      throw errorAt(lines, start, `YAML could not be read: ${clip((e as Error).message, 200)}`);
    }
    docs.push({ value, doc, line: lines.linePos(start).line });
  }
  return { docs, lines };
}

/**
 * The concrete syntax tree, refusing inputs with more than LIMITS.tokens lexical tokens while lexing: parsing costs
 * about the same per token whatever the bytes are, so this bounds the time every later stage takes too.
 */
function syntaxTree(text: string, lines: LineCounter): CST.Token[] {
  const parser = new Parser(lines.addNewLine);
  lines.addNewLine(0);
  const tokens: CST.Token[] = [];
  let count = 0;
  for (const lexeme of new Lexer().lex(text)) {
    yamlWork.steps++;
    if (++count > LIMITS.tokens) {
      const offset = (parser as unknown as { offset: number }).offset;
      throw errorAt(lines, offset, `the config has more than ${LIMITS.tokens} YAML tokens (keys, values, indentation, line breaks, comments); a generated config has about 1,500`);
    }
    for (const t of parser.next(lexeme)) tokens.push(t);
  }
  for (const t of parser.end()) tokens.push(t);
  return tokens;
}

type CstItem = { start?: CST.SourceToken[]; key?: CST.Token | null; value?: CST.Token };

/** Nesting depth and document count, on the concrete syntax tree (built without recursion), before composing. */
function checkSyntaxTree(tokens: CST.Token[], lines: LineCounter): void {
  let documents = 0;
  const stack: [CST.Token, number][] = [];
  for (const t of tokens) {
    if (t.type !== "document") continue;
    if (++documents > LIMITS.documents) {
      throw errorAt(lines, t.offset, `more than ${LIMITS.documents} documents; a machine config may have at most ${LIMITS.documents}`);
    }
    if (t.value) stack.push([t.value, 1]);
    while (stack.length > 0) {
      const [tok, depth] = stack.pop()!;
      yamlWork.steps++;
      if (tok.type !== "block-map" && tok.type !== "block-seq" && tok.type !== "flow-collection") continue;
      if (depth > LIMITS.depth) {
        throw errorAt(lines, tok.offset, `YAML is nested more than ${LIMITS.depth} levels deep`);
      }
      for (const item of tok.items as CstItem[]) {
        if (item.key) stack.push([item.key, depth + 1]);
        if (item.value) stack.push([item.value, depth + 1]);
      }
    }
  }
}

interface Budget {
  nodes: number;
  bytes: number;
  aliases: number;
  anchors: number;
}

interface Size {
  nodes: number;
  bytes: number;
  depth: number;
}

const EMPTY: Size = { nodes: 0, bytes: 0, depth: 0 };

/**
 * One pass over a composed document: duplicate keys (as the package would report them), key and string sizes,
 * anchors and aliases (a recursive alias is refused, as go-yaml does), and the node count, text size and depth
 * the document has once every alias is expanded (memoized per anchored node, so this stays linear).
 */
function checkTree(doc: Document.Parsed, lines: LineCounter, budget: Budget): void {
  const anchors = new Map<string, YamlNode>();
  const sizes = new Map<YamlNode, Size>();
  const open = new Set<YamlNode>();
  const path: PathSegment[] = [];

  const fail = (node: { range?: readonly number[] | null } | null | undefined, message: string): never => {
    throw errorAt(lines, node?.range?.[0] ?? doc.range[0], message, formatPath(path));
  };

  const add = (total: Size, s: Size, node: YamlNode | null | undefined) => {
    total.nodes += s.nodes;
    total.bytes += s.bytes;
    total.depth = Math.max(total.depth, s.depth);
    if (total.nodes > budget.nodes) {
      fail(node, `the document has more than ${budget.nodes} entries (after expanding aliases)`);
    }
    if (total.bytes > budget.bytes) {
      fail(node, `the document holds more than ${formatBytes(budget.bytes)} of text (after expanding aliases)`);
    }
  };

  const visit = (node: YamlNode | null | undefined): Size => {
    yamlWork.steps++;
    if (!node) return EMPTY;
    if (isAlias(node)) {
      if (--budget.aliases < 0) fail(node, `more than ${LIMITS.aliases} aliases`);
      const target = anchors.get(node.source);
      if (!target) return fail(node, `unknown anchor "${clip(node.source, 64)}"`);
      if (open.has(target)) return fail(node, `alias *${clip(node.source, 64)} refers to a node that contains it`);
      return sizes.get(target) ?? EMPTY;
    }
    const anchor = (node as { anchor?: string }).anchor;
    if (anchor) {
      if (--budget.anchors < 0) fail(node, `more than ${LIMITS.anchors} anchors`);
      anchors.set(anchor, node);
    }
    let size: Size;
    if (isScalar(node)) {
      const v = node.value;
      const len = typeof v === "string" ? v.length : v instanceof Uint8Array ? v.byteLength : 8;
      if (len > LIMITS.stringBytes && (typeof v !== "string" || Buffer.byteLength(v) > LIMITS.stringBytes)) {
        fail(node, `a string of ${formatBytes(len)} is longer than the ${formatBytes(LIMITS.stringBytes)} allowed`);
      }
      size = { nodes: 0, bytes: len, depth: 0 };
    } else {
      open.add(node);
      const total: Size = { nodes: 1, bytes: 0, depth: 0 };
      if (isMap(node)) {
        const seen = new Map<unknown, true>();
        for (const pair of node.items) {
          const key = pair.key as YamlNode | null;
          let seg: PathSegment = "?";
          if (isScalar(key)) {
            const kv = key.value;
            if (seen.has(kv)) {
              const pos = lines.linePos(key.range?.[0] ?? 0);
              throw new ConfigError([
                { path: "", message: `malformed YAML at line ${pos.line}, column ${pos.col}: Map keys must be unique`, line: pos.line, column: pos.col },
              ]);
            }
            seen.set(kv, true);
            seg = typeof kv === "symbol" ? "<<" : String(kv);
            if (seg.length > LIMITS.keyBytes) {
              fail(key, `a map key of ${formatBytes(seg.length)} is longer than the ${formatBytes(LIMITS.keyBytes)} allowed ("${clip(seg, 40)}")`);
            }
          } else {
            add(total, visit(key), key);
          }
          path.push(seg);
          const v = visit(pair.value as YamlNode | null);
          add(total, { nodes: v.nodes + 1, bytes: v.bytes + (typeof seg === "string" ? seg.length : 0), depth: v.depth }, pair.value as YamlNode);
          path.pop();
        }
      } else if (isSeq(node)) {
        node.items.forEach((item, i) => {
          path.push(i);
          const v = visit(item as YamlNode);
          add(total, { nodes: v.nodes + 1, bytes: v.bytes, depth: v.depth }, item as YamlNode);
          path.pop();
        });
      }
      total.depth += 1;
      if (total.depth > LIMITS.depth) fail(node, `YAML is nested more than ${LIMITS.depth} levels deep (after expanding aliases)`);
      open.delete(node);
      size = total;
    }
    if (anchor) sizes.set(node, size);
    return size;
  };

  const root = visit(doc.contents as YamlNode | null);
  add({ nodes: 0, bytes: 0, depth: 0 }, root, doc.contents as YamlNode);
  budget.nodes -= root.nodes;
  budget.bytes -= root.bytes;
}

/** Parses one YAML document (or an empty input) to plain JS. */
export function parseYamlValue(text: string): unknown {
  const { docs } = parseYamlStream(text);
  if (docs.length > 1) throw new ConfigError("expected a single YAML document");
  return docs[0]?.value ?? null;
}

/** Encodes one value as a YAML document body (no leading `---`), ending with a newline. */
export function stringifyYaml(value: unknown): string {
  return stringify(value, {
    indent: 4,
    indentSeq: true,
    lineWidth: 0,
    aliasDuplicateObjects: false,
  });
}

/** Encodes several documents as one stream separated by `---`. */
export function stringifyYamlStream(values: unknown[]): string {
  return values.map(stringifyYaml).join("---\n");
}
