/**
 * RFC 6902 JSON patches (via the rfc6902 package), applied as upstream does: to the config text converted to JSON
 * (read the way ghodss/yaml reads YAML, i.e. yaml.v2: `yes` is true), and the result converted back to YAML text
 * the way ghodss/yaml writes it (encode/json-yaml.ts). As upstream, a JSON patch against a multi-document config is
 * refused: its paths could not say which document they mean.
 */
import { applyPatch, type Operation } from "rfc6902";
import { jsonToYaml } from "../encode/index.js";
import { ConfigError } from "../errors.js";
import { isPlainObject } from "../tree.js";
import { parseYamlStream } from "../yaml.js";

export interface JsonPatch {
  type: "jsonpatch";
  ops: Operation[];
}

const OPS = new Set(["add", "remove", "replace", "move", "copy", "test"]);

/** Checks the shape of each operation so a bad patch fails when read, naming the operation. */
export function jsonPatch(list: readonly unknown[]): JsonPatch {
  const ops = list.map((op, i): Operation => {
    const where = `JSON patch operation ${i}`;
    if (!isPlainObject(op)) throw new ConfigError(`${where}: expected a map`);
    if (typeof op.op !== "string" || !OPS.has(op.op)) throw new ConfigError(`${where}: invalid "op" ${JSON.stringify(op.op)}`);
    if (typeof op.path !== "string") throw new ConfigError(`${where}: missing "path"`);
    if ((op.op === "move" || op.op === "copy") && typeof op.from !== "string") throw new ConfigError(`${where}: missing "from"`);
    if ((op.op === "add" || op.op === "replace" || op.op === "test") && !("value" in op)) {
      throw new ConfigError(`${where}: missing "value"`);
    }
    return op as unknown as Operation;
  });
  return { type: "jsonpatch", ops };
}

export const MULTIDOC_JSON_PATCH_ERROR = "JSON6902 patches are not supported for multi-document machine configuration";

/** Go's encoding/json refuses infinities and NaN (YAML `.inf`, `.nan`), before any operation runs. */
function checkJson(v: unknown): void {
  const stack = [v];
  while (stack.length > 0) {
    const x = stack.pop();
    if (typeof x === "number" && !Number.isFinite(x)) {
      const shown = Number.isNaN(x) ? "NaN" : x > 0 ? "+Inf" : "-Inf";
      throw new ConfigError(`failure converting talos machine config to json: json: unsupported value: ${shown}`);
    }
    if (Array.isArray(x)) stack.push(...x);
    else if (isPlainObject(x)) stack.push(...Object.values(x));
  }
}

/** Applies the operations in order to the config text; the first failing operation aborts the whole patch. */
export function applyJsonPatch(text: string, patch: JsonPatch): string {
  const { docs } = parseYamlStream(text, { dialect: "v2" });
  if (docs.length !== 1) throw new ConfigError(MULTIDOC_JSON_PATCH_ERROR);
  checkJson(docs[0].value);
  // Through JSON text, as upstream: values that YAML aliases share become copies, so an operation changes one place.
  const target: unknown = JSON.parse(JSON.stringify(docs[0].value ?? null));
  for (const op of patch.ops) {
    const [err] = applyPatch(target, [op]);
    if (err) {
      throw new ConfigError(`failure applying rfc6902 patches to talos machine config: ${op.op} ${op.path}: ${err.message}`);
    }
  }
  return jsonToYaml(target);
}
