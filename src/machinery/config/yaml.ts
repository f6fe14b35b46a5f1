/**
 * YAML reading and writing tuned to behave like the Go decoder talosctl and Talos use (go-yaml v3):
 * duplicate keys are errors, `0644` is octal (Go parses ints with base 0), merge keys work, and output uses
 * 4-space indentation without line folding, like the Go encoder.
 */
import { LineCounter, parseAllDocuments, stringify, type Document, type ScalarTag } from "yaml";
import { ConfigError } from "./errors.js";

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
  uniqueKeys: true,
} as const;

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

export function decodeText(input: string | Uint8Array): string {
  if (typeof input === "string") return input;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(input);
  } catch {
    throw new ConfigError("config is not valid UTF-8 text");
  }
}

/** Parses every document of a YAML stream; the first syntax error becomes a ConfigError with line/column. */
export function parseYamlStream(text: string): YamlStream {
  const lines = new LineCounter();
  const parsed = parseAllDocuments(text, { ...parseOptions, lineCounter: lines });
  const list = Array.isArray(parsed) ? parsed : [];
  const docs: YamlDoc[] = [];
  for (const doc of list) {
    const err = doc.errors[0];
    if (err) {
      const pos = err.linePos?.[0] ?? lines.linePos(err.pos[0]);
      const reason = err.message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "");
      throw new ConfigError([
        {
          path: "",
          message: `malformed YAML at line ${pos.line}, column ${pos.col}: ${reason}`,
          line: pos.line,
          column: pos.col,
        },
      ]);
    }
    const start = doc.contents?.range?.[0] ?? doc.range[0];
    docs.push({ value: doc.toJS({ maxAliasCount: 1000 }) ?? null, doc, line: lines.linePos(start).line });
  }
  return { docs, lines };
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
