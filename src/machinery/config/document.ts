/**
 * One document of a (possibly multi-document) machine config.
 */
import type { PlainObject } from "./tree.js";

export const V1ALPHA1 = "v1alpha1";

export interface ConfigDocument {
  /** `v1alpha1` for the legacy document (the one with `version:`, `machine:`, `cluster:`), else the `kind:`. */
  readonly kind: string;
  /** `apiVersion:`; "" for the legacy v1alpha1 document. */
  readonly apiVersion: string;
  /** `name:` of named kinds (e.g. KmsgLogConfig), used to tell documents of one kind apart. */
  readonly name?: string;
  /** False for kinds this loader does not know; such documents are kept as is. */
  readonly known: boolean;
  /** The document as decoded, in the author's key order. */
  readonly data: PlainObject;
  /** 1-based line where the document starts in the source. */
  readonly line: number;
}

/** Identity used for duplicate detection and for merging patch documents: apiVersion/kind/name. */
export function documentId(doc: Pick<ConfigDocument, "apiVersion" | "kind" | "name">): string {
  return `${doc.apiVersion}/${doc.kind}/${doc.name ?? ""}`;
}

export function isV1Alpha1(doc: Pick<ConfigDocument, "kind">): boolean {
  return doc.kind === V1ALPHA1;
}
