/**
 * The text a JSON patch leaves behind. Upstream applies an RFC 6902 patch to the config converted to JSON and
 * converts the result back with ghodss/yaml, i.e. gopkg.in/yaml.v2's Marshal of the decoded JSON: keys sorted,
 * 2-space indentation, sequences under a key not indented, long lines folded at column 80, YAML 1.1 words quoted.
 * Going through JSON also turns every number into what its JSON text reads back as (1.0 becomes 1), and refuses
 * infinities and NaN, as Go's encoding/json does.
 */
import { ConfigError } from "../errors.js";
import { isPlainObject } from "../tree.js";
import { emitDocument, GO_YAML_V2, NULL, scalar, type YNode } from "./emitter.js";
import { goFloat, goInt, isBase60Float, resolvePlain, sortKeys } from "./scalar.js";

function v2String(s: string): YNode {
  if (s.includes("\n")) return scalar(s, "literal");
  return scalar(s, resolvePlain(s, "v2") === "str" && !isBase60Float(s) ? "plain" : "double");
}

function v2Number(n: number): YNode {
  if (!Number.isFinite(n)) {
    throw new ConfigError(`failure converting talos machine config to json: json: unsupported value: ${n > 0 ? "+Inf" : n < 0 ? "-Inf" : "NaN"}`);
  }
  // Go's JSON writes integral values below 1e21 without exponent; yaml.v2 reads those as int64 or uint64 when
  // they fit, and anything else as a float.
  if (Number.isInteger(n) && Math.abs(n) < 1e21 && n >= -(2 ** 63) && n < 2 ** 64) return scalar(goInt(n));
  return scalar(goFloat(n));
}

function jsonNode(v: unknown): YNode {
  if (v === null || v === undefined) return NULL;
  if (typeof v === "string") return v2String(v);
  if (typeof v === "boolean") return scalar(v ? "true" : "false");
  if (typeof v === "number") return v2Number(v);
  if (Array.isArray(v)) return { kind: "seq", items: v.map(jsonNode) };
  if (isPlainObject(v)) {
    const keys = sortKeys(Object.keys(v).filter((k) => v[k] !== undefined), "v2");
    return { kind: "map", entries: keys.map((k) => [v2String(k), jsonNode(v[k])]) };
  }
  return v2String(String(v));
}

/** A JSON value written as ghodss/yaml's JSONToYAML writes it. */
export function jsonToYaml(value: unknown): string {
  return emitDocument(jsonNode(value), GO_YAML_V2);
}
