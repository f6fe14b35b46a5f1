/**
 * Decodes YAML text into config documents, following upstream's decoder rules:
 *  - empty (null) documents are skipped;
 *  - a document with `kind`/`apiVersion` is a kind document (both are required);
 *  - a document with `version`, `machine`, `cluster`, `debug` or `persist` is the legacy v1alpha1 document, and its
 *    `version` (when given) must be `v1alpha1`;
 *  - two documents with the same apiVersion/kind/name are an error;
 *  - kinds this loader does not know are kept unchanged and reported as warnings.
 */
import { isMap, isScalar, isSeq, type Document, type Pair, type YAMLMap } from "yaml";
import { documentId, V1ALPHA1, type ConfigDocument } from "./document.js";
import { ConfigError, issueAt, type ConfigIssue } from "./errors.js";
import { toConfigIssues, type Locator } from "./issues.js";
import { KIND_API_VERSION, KNOWN_KINDS, V1ALPHA1_KEYS } from "./kinds.js";
import { describeValue, type PathSegment } from "./path.js";
import { v1alpha1Schema, type V1Alpha1Config } from "./schema.js";
import { deepFreeze, isPlainObject, orderLike, stripNulls, type PlainObject } from "./tree.js";
import { parseYamlStream, yamlWork, type YamlStream } from "./yaml.js";

export interface Decoded {
  documents: ConfigDocument[];
  v1alpha1?: V1Alpha1Config;
  warnings: string[];
}

export function decodeDocuments(text: string): Decoded {
  const stream = parseYamlStream(text);
  const documents: ConfigDocument[] = [];
  const warnings: string[] = [];
  const seen = new Set<string>();
  let typed: V1Alpha1Config | undefined;

  for (const { value, doc, line } of stream.docs) {
    if (value === null || value === undefined) continue;
    if (!isPlainObject(value)) {
      throw new ConfigError([{ path: "", message: `expected a YAML map at line ${line}, got ${describeValue(value)}`, line }]);
    }
    const cdoc = classifyDocument(value, line);
    const id = documentId(cdoc);
    if (seen.has(id)) {
      const what = cdoc.kind === V1ALPHA1 ? "v1alpha1 document" : `document ${cdoc.apiVersion}/${cdoc.kind}/${cdoc.name ?? ""}`;
      throw new ConfigError([{ path: "", message: `duplicate ${what} is not allowed (line ${line})`, line }]);
    }
    seen.add(id);
    if (cdoc.kind === V1ALPHA1) typed = parseV1Alpha1(value, locator(doc, stream));
    else if (!cdoc.known) {
      warnings.push(`unknown document kind "${cdoc.kind}" (apiVersion "${cdoc.apiVersion}") at line ${line} is kept as is`);
    }
    documents.push(cdoc);
  }

  if (documents.length === 0) throw new ConfigError("config not found");
  return { documents, v1alpha1: typed, warnings };
}

function scalarField(data: PlainObject, key: string, line: number): string | undefined {
  const v = data[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") {
    throw new ConfigError([{ path: key, message: `${key}: expected string, got ${describeValue(v)}`, line }]);
  }
  return v;
}

/** Identifies a decoded document (kind doc or legacy v1alpha1) by upstream's rules; throws ConfigError. */
export function classifyDocument(data: PlainObject, line: number): ConfigDocument {
  const kind = scalarField(data, "kind", line);
  const apiVersion = scalarField(data, "apiVersion", line);
  if (kind !== undefined || apiVersion !== undefined) {
    if (!kind) throw new ConfigError([{ ...issueAt("kind", `missing kind (document at line ${line})`), line }]);
    if (!apiVersion) throw new ConfigError([{ ...issueAt("apiVersion", `missing apiVersion (document at line ${line})`), line }]);
    const name = typeof data.name === "string" ? data.name : undefined;
    const known = apiVersion === KIND_API_VERSION && KNOWN_KINDS.has(kind);
    return { kind, apiVersion, name, known, data, line };
  }
  if (!V1ALPHA1_KEYS.some((k) => k in data)) {
    throw new ConfigError([{ path: "", message: `missing kind (document at line ${line})`, line }]);
  }
  const version = data.version;
  if (version !== undefined && version !== null && version !== V1ALPHA1) {
    const shown = typeof version === "string" ? version : String(version);
    throw new ConfigError([{ ...issueAt("version", `unknown version ${JSON.stringify(shown)}`), line }]);
  }
  return { kind: V1ALPHA1, apiVersion: "", known: true, data, line };
}

function parseV1Alpha1(data: PlainObject, locate: Locator): V1Alpha1Config {
  const input = stripNulls(data);
  const res = v1alpha1Schema.safeParse(input);
  if (!res.success) {
    const issues: ConfigIssue[] = toConfigIssues(res.error.issues, input, locate);
    throw new ConfigError(issues);
  }
  const ordered = orderLike(res.data, input) as Partial<V1Alpha1Config>;
  return deepFreeze({ ...ordered, machine: ordered.machine ?? {}, cluster: ordered.cluster ?? {} } as V1Alpha1Config);
}

/**
 * Maps a path to its source position: the deepest node on the path that exists. Each map's keys are indexed on first
 * use, so locating every one of n unknown keys costs O(n) in total (the package's getIn scans a map per lookup).
 */
function locator(doc: Document.Parsed, stream: YamlStream): Locator {
  const index = new WeakMap<YAMLMap, Map<string, Pair>>();
  const keysOf = (map: YAMLMap): Map<string, Pair> => {
    let keys = index.get(map);
    if (!keys) {
      keys = new Map();
      for (const pair of map.items) {
        yamlWork.steps++;
        if (isScalar(pair.key)) {
          const k = String(pair.key.value);
          if (!keys.has(k)) keys.set(k, pair);
        }
      }
      index.set(map, keys);
    }
    return keys;
  };
  return (path: readonly PathSegment[]) => {
    let node: unknown = doc.contents;
    let range = (node as { range?: [number, number, number] } | null)?.range;
    for (const seg of path) {
      if (isMap(node)) node = keysOf(node).get(String(seg))?.value;
      else if (isSeq(node) && typeof seg === "number") node = node.items[seg];
      else break;
      const r = (node as { range?: [number, number, number] } | null | undefined)?.range;
      if (!r) break;
      range = r;
    }
    if (!range) return undefined;
    const pos = stream.lines.linePos(range[0]);
    return { line: pos.line, column: pos.col };
  };
}
