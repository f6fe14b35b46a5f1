/**
 * Config patches as talosctl takes them (`--patch`, `--config-patch`): strategic merge patches (YAML documents) and
 * RFC 6902 JSON patches (a JSON or YAML list of operations).
 *
 * Patches apply in order the way upstream's configpatcher.Apply does, which decides the text that comes out:
 *  - a strategic patch works on the loaded config (its documents), and leaves a config that is written by the Go
 *    encoder's rules (encode/): documents in Go field order, unset fields spelled out, 4-space indentation;
 *  - a JSON patch works on the config text converted to JSON, and leaves the text ghodss/yaml writes for the
 *    result (sorted keys, 2-space indentation);
 *  - with no patch, the input text comes back unchanged.
 */
import { encodeConfig } from "../encode/index.js";
import { ConfigError } from "../errors.js";
import { MachineConfig } from "../machineconfig.js";
import { decodeText, parseYamlStream } from "../yaml.js";
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

/** Joins consecutive JSON patches into one, like talosctl does when it loads `--patch` arguments. */
export function joinPatches(patches: readonly Patch[]): Patch[] {
  const out: Patch[] = [];
  for (const p of patches) {
    const last = out[out.length - 1];
    if (p.type === "jsonpatch" && last?.type === "jsonpatch") out[out.length - 1] = { type: "jsonpatch", ops: [...last.ops, ...p.ops] };
    else out.push(p);
  }
  return out;
}

/** Reads several `--patch` arguments; consecutive JSON patches are joined into one, like talosctl does. */
export function loadPatches(args: readonly string[], readFile: (path: string) => string): Patch[] {
  return joinPatches(args.map((arg) => parsePatch(resolvePatchArg(arg, readFile))));
}

function documentsOf(text: string): PlainDocument[] {
  return MachineConfig.load(text).documents.map((d) => ({ apiVersion: d.apiVersion, kind: d.kind, name: d.name, data: d.data }));
}

/**
 * Applies patches in order to a config and returns the result as YAML text, byte for byte what upstream's
 * configpatcher returns for the same input. The result is loaded again, so a patch that produces an invalid config
 * fails here with a ConfigError.
 */
export function applyPatches(config: string | Uint8Array, patches: readonly Patch[]): string {
  // Either the current text or the current documents, whichever the last patch left (as upstream's Apply).
  let text: string | undefined = decodeText(config);
  let docs: PlainDocument[] | undefined;
  for (const p of patches) {
    if (p.type === "jsonpatch") {
      text = applyJsonPatch(text ?? encodeConfig(docs!), p);
      docs = undefined;
    } else {
      docs = applyStrategic(docs ?? documentsOf(text!), p);
      text = undefined;
    }
  }
  const out = text ?? encodeConfig(docs!);
  MachineConfig.load(out);
  return out;
}

/** applyPatches for a loaded config, returning the patched config. */
export function patchConfig(cfg: MachineConfig, patches: readonly Patch[]): MachineConfig {
  return MachineConfig.load(applyPatches(cfg.encode(), patches));
}

