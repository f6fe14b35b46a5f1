/**
 * A loaded machine config: the original bytes, its documents, the typed v1alpha1 view and load warnings.
 * Instances are immutable; `withV1Alpha1` and `withDocuments` build modified copies (re-encoded and re-loaded, so a
 * modified config is checked exactly like one read from disk).
 */
import { decodeDocuments } from "./decode.js";
import { isV1Alpha1, type ConfigDocument } from "./document.js";
import type { ClusterSection, MachineSection, V1Alpha1Config } from "./schema.js";
import { deepClone, dropUndefined, isPlainObject, orderLike, type PlainObject } from "./tree.js";
import { decodeText, stringifyYamlStream } from "./yaml.js";

export type MachineType = "controlplane" | "worker" | "init" | "unknown";

/** Upstream machine.ParseType: "", "worker" and "join" all mean worker. */
export function parseMachineType(t: string | undefined): MachineType {
  switch (t ?? "") {
    case "init":
      return "init";
    case "controlplane":
      return "controlplane";
    case "":
    case "worker":
    case "join":
      return "worker";
    default:
      return "unknown";
  }
}

export class MachineConfig {
  private constructor(
    readonly raw: Uint8Array,
    readonly documents: readonly ConfigDocument[],
    readonly warnings: readonly string[],
    private readonly typed: V1Alpha1Config | undefined,
  ) {
    // Immutable, so the store shares one instance with every reader instead of cloning (resource.ts).
    Object.freeze(this);
  }

  /** Loads a config from YAML text or bytes; throws ConfigError. */
  static load(input: string | Uint8Array): MachineConfig {
    const text = decodeText(input);
    // Copy: the caller may reuse its buffer, and encode() must keep returning what was loaded.
    const raw = typeof input === "string" ? new TextEncoder().encode(input) : new Uint8Array(input);
    const decoded = decodeDocuments(text);
    return new MachineConfig(raw, Object.freeze(decoded.documents), Object.freeze(decoded.warnings), decoded.v1alpha1);
  }

  /** Builds a config from plain document objects (in order), e.g. the result of a patch. */
  static fromDocuments(docs: readonly unknown[]): MachineConfig {
    return MachineConfig.load(stringifyYamlStream(docs.map(dropUndefined)));
  }

  /** The typed v1alpha1 document (deep-frozen), or undefined when the config has none. */
  v1alpha1(): V1Alpha1Config | undefined {
    return this.typed;
  }

  get machine(): MachineSection | undefined {
    return this.typed?.machine;
  }

  get cluster(): ClusterSection | undefined {
    return this.typed?.cluster;
  }

  /** Machine role; "unknown" without a v1alpha1 document or with an unrecognized `machine.type`. */
  machineType(): MachineType {
    return this.typed ? parseMachineType(this.typed.machine.type) : "unknown";
  }

  /** `cluster.clusterName`, or the KubeClusterConfig document's (the Talos 1.14 layout). */
  clusterName(): string | undefined {
    return this.typed?.cluster.clusterName ?? this.kindString("KubeClusterConfig", "clusterName");
  }

  /** `cluster.controlPlane.endpoint` (or KubeClusterConfig's), e.g. https://1.2.3.4:6443. */
  endpoint(): string | undefined {
    return this.typed?.cluster.controlPlane?.endpoint ?? this.kindString("KubeClusterConfig", "endpoint");
  }

  /**
   * The Kubernetes CA as PEM text: `cluster.ca` (base64 PEM) in the classic layout, or the
   * KubeAPIServerCAConfig document's issuing CA (plain PEM) in the Talos 1.14 layout.
   */
  kubernetesCA(): { crt: string; key: string } | undefined {
    const ca = this.typed?.cluster.ca;
    if (ca?.crt && ca.key) return { crt: fromB64(ca.crt), key: fromB64(ca.key) };
    const issuing = this.document("KubeAPIServerCAConfig")?.data.issuingCA as { cert?: string; key?: string } | undefined;
    if (issuing?.cert && issuing.key) return { crt: issuing.cert, key: issuing.key };
    return undefined;
  }

  private kindString(kind: string, key: string): string | undefined {
    const v = this.document(kind)?.data[key];
    return typeof v === "string" ? v : undefined;
  }

  hostname(): string | undefined {
    return this.typed?.machine.network?.hostname;
  }

  /** The first document of `kind` (and `name`, when given). */
  document(kind: string, name?: string): ConfigDocument | undefined {
    return this.documents.find((d) => d.kind === kind && (name === undefined || d.name === name));
  }

  documentsOfKind(kind: string): ConfigDocument[] {
    return this.documents.filter((d) => d.kind === kind);
  }

  /** The config bytes: the original input, unchanged, for a loaded config. */
  encode(): Uint8Array {
    return this.raw;
  }

  toString(): string {
    return new TextDecoder().decode(this.raw);
  }

  /**
   * Returns a config whose v1alpha1 document is changed by `mutator` (which edits a mutable copy in place or returns
   * a replacement). Other documents are kept. Creates the v1alpha1 document when there was none.
   */
  withV1Alpha1(mutator: (cfg: V1Alpha1Config) => V1Alpha1Config | void): MachineConfig {
    const draft: V1Alpha1Config = this.typed
      ? deepClone(this.typed)
      : { version: "v1alpha1", machine: {}, cluster: {} };
    const next = mutator(draft) ?? draft;
    const original = this.documents.find(isV1Alpha1)?.data;
    const body = dropUndefined(next) as PlainObject;
    // Do not invent `machine: {}` / `cluster: {}` sections that the typed view only fills in for convenience.
    for (const k of ["machine", "cluster"] as const) {
      if (isPlainObject(body[k]) && Object.keys(body[k]).length === 0 && !(original && k in original)) delete body[k];
    }
    const data = orderLike(body, original);
    const docs = this.documents.map((d) => (isV1Alpha1(d) ? data : d.data));
    if (!original) docs.unshift(data);
    return MachineConfig.fromDocuments(docs);
  }

  /** Returns a config made of `this` documents transformed by `fn` (documents returned as plain objects). */
  withDocuments(fn: (docs: PlainObject[]) => PlainObject[]): MachineConfig {
    return MachineConfig.fromDocuments(fn(this.documents.map((d) => deepClone(d.data))));
  }
}

function fromB64(s: string): string {
  return Buffer.from(s, "base64").toString("utf8");
}
