/**
 * A resource type from its upstream facts: type, namespace, aliases, columns, sensitivity, and the spec's YAML
 * keys in Go's struct order with their omitempty flags. The YAML spec keeps that order and drops what Go's
 * omitempty drops; the proto spec goes through the generic encoder (protoenc.ts) with the given overrides.
 */
import type { DescMessage } from "@bufbuild/protobuf";
import { specToProto, type SpecToProtoOptions } from "../protoenc.js";
import type { PrintColumn, ResourceType } from "../resource.js";
import { specToYaml } from "../yaml.js";
import { omitEmpty } from "./k8s.js";

export interface TypeFacts<S> {
  type: string;
  namespace: string;
  aliases?: string[];
  printColumns?: PrintColumn[];
  sensitive?: boolean;
  /** The spec's proto message; omitted for specs without fields (e.g. PCRStatus). */
  schema?: DescMessage;
  /** YAML keys in Go's struct order. */
  keys: (keyof S & string)[];
  /** Keys tagged omitempty. */
  omitempty?: (keyof S & string)[];
  proto?: SpecToProtoOptions;
}

export function defineType<S extends object>(f: TypeFacts<S>): ResourceType<S> {
  const ordered = (s: S): S => {
    const out: Record<string, unknown> = {};
    for (const k of f.keys) if (k in s) out[k] = (s as Record<string, unknown>)[k];
    return omitEmpty(out as S, f.omitempty ?? []);
  };
  return {
    type: f.type,
    defaultNamespace: f.namespace,
    aliases: f.aliases,
    printColumns: f.printColumns,
    sensitive: f.sensitive,
    toYaml: (s) => specToYaml(ordered(s)),
    toProto: (s) => (f.schema ? specToProto(f.schema, ordered(s), f.proto) : new Uint8Array()),
  };
}
