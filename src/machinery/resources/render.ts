/** yaml_spec rendering: the type's own renderer, or a plain YAML dump of the spec object. */
import { stringify } from "yaml";
import type { ResourceType } from "./resource.js";

export function specYaml<S>(t: ResourceType<S>, spec: S): string {
  if (t.toYaml) return t.toYaml(spec);
  return stringify(spec, { lineWidth: 0, indent: 4, aliasDuplicateObjects: false });
}
