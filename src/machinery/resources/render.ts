/** yaml_spec rendering: the type's own renderer, or the Go-compatible YAML of the spec object. */
import type { ResourceType } from "./resource.js";
import { specToYaml } from "./yaml.js";

export function specYaml<S>(t: ResourceType<S>, spec: S): string {
  return t.toYaml ? t.toYaml(spec) : specToYaml(spec);
}
