/**
 * RFC 6902 JSON patches (via the rfc6902 package), applied to the config's only document. As upstream, a JSON
 * patch against a multi-document config is refused: its paths could not say which document they mean.
 */
import { applyPatch, type Operation } from "rfc6902";
import { ConfigError } from "../errors.js";
import { isPlainObject, type PlainObject } from "../tree.js";

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

/** Applies the operations in order to a copy of `doc`; the first failing operation aborts the whole patch. */
export function applyJsonPatch(docs: readonly PlainObject[], patch: JsonPatch): PlainObject {
  if (docs.length !== 1) throw new ConfigError(MULTIDOC_JSON_PATCH_ERROR);
  const target = structuredClone(docs[0]);
  for (const op of patch.ops) {
    const [err] = applyPatch(target, [op]);
    if (err) {
      throw new ConfigError(`failure applying rfc6902 patches to talos machine config: ${op.op} ${op.path}: ${err.message}`);
    }
  }
  return target;
}
