/**
 * Config patches as talosctl takes them (`--patch`, `--config-patch`): strategic merge patches (YAML documents) and
 * RFC 6902 JSON patches (a JSON or YAML list of operations).
 */
import { classifyDocument } from "../decode.js";
import { ConfigError } from "../errors.js";
import { MachineConfig } from "../machineconfig.js";
import { isPlainObject } from "../tree.js";
import { decodeText, parseYamlStream, stringifyYamlStream } from "../yaml.js";
import { applyJsonPatch, jsonPatch, type JsonPatch } from "./jsonpatch.js";
import { applyStrategic, strategicPatch, type PlainDocument, type StrategicPatch } from "./strategic.js";

export type Patch = StrategicPatch | JsonPatch;
export type { JsonPatch, StrategicPatch };

/**
 * Reads a patch. A single document that is a list is a JSON patch (JSON is YAML, so `[{"op": ...}]` works too);
 * anything else is a strategic merge patch. An empty patch is a strategic patch that changes nothing.
 */
export function parsePatch(text: string): Patch {
  const docs = parseYamlStream(text).docs.filter((d) => d.value !== null && d.value !== undefined);
  if (docs.length === 1 && Array.isArray(docs[0].value)) return jsonPatch(docs[0].value);
  if (docs.some((d) => Array.isArray(d.value))) throw new ConfigError("a JSON patch must be a single document");
  return strategicPatch(docs);
}

/**
 * Turns a `--patch` argument into patch text: `@file` reads the file; an argument that looks inline (contains a
 * space or newline, or starts with `[` or `{`) is used as is; anything else is taken as a file name (as talosctl).
 */
export function resolvePatchArg(arg: string, readFile: (path: string) => string): string {
  if (arg.startsWith("@")) return readFile(arg.slice(1));
  if (/[\n ]/.test(arg) || arg.startsWith("[") || arg.startsWith("{")) return arg;
  return readFile(arg);
}

/** Reads several `--patch` arguments; consecutive JSON patches are joined into one, like talosctl does. */
export function loadPatches(args: readonly string[], readFile: (path: string) => string): Patch[] {
  const out: Patch[] = [];
  for (const arg of args) {
    const p = parsePatch(resolvePatchArg(arg, readFile));
    const last = out[out.length - 1];
    if (p.type === "jsonpatch" && last?.type === "jsonpatch") out[out.length - 1] = { type: "jsonpatch", ops: [...last.ops, ...p.ops] };
    else out.push(p);
  }
  return out;
}

function identify(data: unknown): PlainDocument {
  if (!isPlainObject(data)) throw new ConfigError("patched document is not a YAML map");
  const d = classifyDocument(data, 0);
  return { apiVersion: d.apiVersion, kind: d.kind, name: d.name, data };
}

/**
 * Applies patches in order to a config and returns the result as YAML text. The input must load; the result is
 * loaded again, so a patch that produces an invalid config fails here with a ConfigError.
 */
export function applyPatches(config: string | Uint8Array, patches: readonly Patch[]): string {
  const cfg = MachineConfig.load(config);
  let docs: PlainDocument[] = cfg.documents.map((d) => ({ apiVersion: d.apiVersion, kind: d.kind, name: d.name, data: d.data }));
  for (const p of patches) {
    if (p.type === "jsonpatch") docs = [identify(applyJsonPatch(docs.map((d) => d.data), p))];
    else docs = applyStrategic(docs, p);
  }
  const text = stringifyYamlStream(docs.map((d) => d.data));
  MachineConfig.load(text);
  return text;
}

/** applyPatches for a loaded config, returning the patched config. */
export function patchConfig(cfg: MachineConfig, patches: readonly Patch[]): MachineConfig {
  return MachineConfig.load(applyPatches(decodeText(cfg.encode()), patches));
}
