/**
 * ResourceDefinitions (`ResourceDefinitions.meta.cosi.dev`) computed from our ResourceTypes exactly as
 * cosi-project/runtime fills them, because `talosctl get <alias>` resolves aliases from these lists
 * (talos-resource-api.md §2.1–2.2) and the TYPE column prints `displayType`.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import {
  NamespaceSpecSchema,
  ResourceDefinitionSpecSchema,
  ResourceDefinitionSpec_Sensitivity,
  type ResourceDefinitionSpec,
} from "../api/gen/cosi/meta_pb.js";
import type { PrintColumn, ResourceType } from "./resource.js";

/** The RD spec in its YAML shape (key order as Go's struct). */
export interface ResourceDefinitionSpecYaml {
  type: string;
  displayType: string;
  defaultNamespace: string;
  aliases: string[];
  allAliases: string[];
  /** Present only when set (omitempty). */
  skipAutomaticAliases?: true;
  printColumns: PrintColumn[];
  /** Present only for sensitive types (omitempty). */
  sensitivity?: "sensitive";
}

export interface ResourceDefinition {
  /** Lower-cased type, the RD's resource id. */
  id: string;
  spec: ResourceDefinitionSpecYaml;
  toMessage(): ResourceDefinitionSpec;
  toProto(): Uint8Array;
}

export const META_NAMESPACE = "meta";
export const RESOURCE_DEFINITION_TYPE = "ResourceDefinitions.meta.cosi.dev";
export const NAMESPACE_TYPE = "Namespaces.meta.cosi.dev";

const NAME_RE = /^[A-Z][A-Za-z0-9-]+$/;
const SUFFIX_RE = /^[a-z][a-z0-9-]+(\.[a-z][a-z0-9-]+)*$/;

/**
 * Singular of a plural CamelCase type name, reproducing what go-pluralize (used by COSI) returns for
 * every Talos type name. The rules are ordered; the first match wins. Note `Caches` → `Cach`: COSI
 * really displays `DNSResolveCach`, and matching it keeps our TYPE column identical.
 */
const SINGULAR_RULES: [RegExp, string][] = [
  [/ies$/, "y"], // Identities → Identity, BootedEntries → BootedEntry
  [/(x|ch|sh|ss|zz|alias|[^aou]us)es$/, "$1"], // Addresses, Statuses, LinkRefreshes, Caches
  [/ss$/, "ss"], // already singular
  [/s$/, ""], // Members, Infos, Services, Namespaces, Diagnostics, CertSANs
];

export function singularize(name: string): string {
  for (const [re, repl] of SINGULAR_RULES) if (re.test(name)) return name.replace(re, repl);
  return name;
}

/** The parts of a ResourceType an RD is computed from (any ResourceType<S> fits, whatever its spec). */
export type DefinitionSource = Omit<ResourceType, "toProto" | "toYaml">;

export function resourceDefinitionSpec(t: DefinitionSource): ResourceDefinition {
  const spec = fillSpec(t);
  const toMessage = () => rdSpecMessage(spec);
  return { id: t.type.toLowerCase(), spec, toMessage, toProto: () => toBinary(ResourceDefinitionSpecSchema, toMessage()) };
}

/** Validates the type string like COSI's Fill and derives display type and aliases. */
function fillSpec(t: DefinitionSource): ResourceDefinitionSpecYaml {
  const dot = t.type.indexOf(".");
  if (dot < 0) throw new Error(`resource type ${t.type}: missing suffix`);
  const name = t.type.slice(0, dot);
  const suffix = t.type.slice(dot + 1);
  if (!NAME_RE.test(name) || name.toLowerCase() === name) throw new Error(`resource type ${t.type}: name must be CamelCase`);
  if (!SUFFIX_RE.test(suffix)) throw new Error(`resource type ${t.type}: suffix must be dotted lowercase`);
  const displayType = singularize(name);
  if (displayType === name) throw new Error(`resource type ${t.type}: name should be plural`);

  const aliases = [...(t.aliases ?? [])];
  const allAliases: string[] = [];
  if (!t.skipAutomaticAliases) {
    aliases.push(displayType.toLowerCase());
    const lower = name.toLowerCase();
    allAliases.push(lower);
    const parts = suffix.split(".");
    for (let i = 1; i < parts.length; i++) allAliases.push([lower, ...parts.slice(0, i)].join("."));
    const capitals = name.replace(/[^A-Z]/g, "");
    if (capitals.length > 1) {
      aliases.push(capitals.toLowerCase());
      if (!capitals.endsWith("S")) aliases.push(`${capitals}s`.toLowerCase());
    }
  }
  allAliases.push(...aliases);

  // Keys are added in Go's struct order, which is the YAML order; omitempty fields only when set.
  const head = { type: t.type, displayType, defaultNamespace: t.defaultNamespace, aliases, allAliases };
  const spec: ResourceDefinitionSpecYaml = {
    ...head,
    ...(t.skipAutomaticAliases ? { skipAutomaticAliases: true as const } : {}),
    printColumns: (t.printColumns ?? []).map((c) => ({ name: c.name, jsonPath: c.jsonPath })),
    ...(t.sensitive ? { sensitivity: "sensitive" as const } : {}),
  };
  return spec;
}

/** The `cosi.resource.meta.ResourceDefinitionSpec` message for an RD spec (skipAutomaticAliases has no field). */
export function rdSpecMessage(spec: ResourceDefinitionSpecYaml): ResourceDefinitionSpec {
  return create(ResourceDefinitionSpecSchema, {
    resourceType: spec.type,
    displayType: spec.displayType,
    defaultNamespace: spec.defaultNamespace,
    aliases: spec.aliases,
    allAliases: spec.allAliases,
    printColumns: spec.printColumns.map((c) => ({ name: c.name, jsonPath: c.jsonPath })),
    sensitivity:
      spec.sensitivity === "sensitive"
        ? ResourceDefinitionSpec_Sensitivity.SENSITIVE
        : ResourceDefinitionSpec_Sensitivity.NON_SENSITIVE,
  });
}

/** The RD type itself; `talosctl get rd` lists these. */
export const resourceDefinitionType: ResourceType<ResourceDefinitionSpecYaml> = {
  type: RESOURCE_DEFINITION_TYPE,
  defaultNamespace: META_NAMESPACE,
  aliases: ["api-resources"],
  printColumns: [{ name: "Aliases", jsonPath: "{.aliases[:]}" }],
  toProto: (spec) => toBinary(ResourceDefinitionSpecSchema, rdSpecMessage(spec)),
};

export interface NamespaceSpecYaml {
  description: string;
}

/** Namespaces are published as resources too; an unknown namespace is refused by the API. */
export const namespaceType: ResourceType<NamespaceSpecYaml> = {
  type: NAMESPACE_TYPE,
  defaultNamespace: META_NAMESPACE,
  aliases: ["ns"],
  toProto: (spec) => toBinary(NamespaceSpecSchema, create(NamespaceSpecSchema, { description: spec.description })),
};
