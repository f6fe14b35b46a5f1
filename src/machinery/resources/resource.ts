/**
 * The resource model shared by the store, the controllers and the COSI API.
 *
 * A spec is a plain JSON-like object in the shape of its YAML rendering (the keys `talosctl get -o yaml`
 * prints). Each resource type knows how to render its spec as YAML text and as protobuf bytes, because
 * talosctl reads tables from `yaml_spec` and typed clients (dashboard, RD lookup) decode `proto_spec`.
 */
export type Phase = "running" | "tearingDown";

export interface Metadata {
  namespace: string;
  type: string;
  id: string;
  /** Monotonic per resource, starting at 1 on create. */
  version: number;
  owner: string;
  phase: Phase;
  created: Date;
  updated: Date;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  finalizers: string[];
}

export interface Resource<S = unknown> {
  metadata: Metadata;
  spec: S;
}

export interface PrintColumn {
  name: string;
  jsonPath: string;
}

/** Everything the API needs to publish a type: its ResourceDefinition and its two spec encodings. */
export interface ResourceType<S = unknown> {
  /** Full type, e.g. `MachineStatuses.runtime.talos.dev`. */
  type: string;
  defaultNamespace: string;
  /** Explicit aliases (automatic ones are derived, see definitions.ts). */
  aliases?: string[];
  skipAutomaticAliases?: boolean;
  printColumns?: PrintColumn[];
  sensitive?: boolean;
  /** YAML text of the spec (`yaml_spec`). Defaults to a YAML dump of the spec object. */
  toYaml?: (spec: S) => string;
  /** Protobuf bytes of the spec (`proto_spec`). */
  toProto: (spec: S) => Uint8Array;
}

/** A resource's identity. */
export interface Pointer {
  namespace: string;
  type: string;
  id: string;
}

export function newMetadata(ptr: Pointer, owner = ""): Metadata {
  const now = new Date();
  return {
    ...ptr,
    version: 1,
    owner,
    phase: "running",
    created: now,
    updated: now,
    labels: {},
    annotations: {},
    finalizers: [],
  };
}

export function newResource<S>(ptr: Pointer, spec: S, owner = ""): Resource<S> {
  return { metadata: newMetadata(ptr, owner), spec };
}

export function cloneResource<S>(r: Resource<S>): Resource<S> {
  return {
    metadata: {
      ...r.metadata,
      created: new Date(r.metadata.created),
      updated: new Date(r.metadata.updated),
      labels: { ...r.metadata.labels },
      annotations: { ...r.metadata.annotations },
      finalizers: [...r.metadata.finalizers],
    },
    // A frozen spec (e.g. the parsed MachineConfig) is immutable, so every reader may share it.
    spec: Object.isFrozen(r.spec) ? r.spec : structuredClone(r.spec),
  };
}
