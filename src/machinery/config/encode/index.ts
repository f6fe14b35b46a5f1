/**
 * Config text as Talos' Go encoder writes it (container.EncodeBytes with comments disabled, which is what a
 * patched config becomes upstream): the v1alpha1 document first, then the other documents in order, each written
 * from its Go type, separated by `---`.
 *
 * Only configs that were changed are encoded; a loaded config keeps its original bytes (MachineConfig.encode).
 */
import { V1ALPHA1 } from "../document.js";
import type { PlainObject } from "../tree.js";
import { emitDocument } from "./emitter.js";
import { documentNode } from "./represent.js";

export { jsonToYaml } from "./json-yaml.js";

export interface EncodableDocument {
  kind: string;
  apiVersion: string;
  data: PlainObject;
}

/** One document as the Go encoder writes it. */
export function encodeDocument(doc: EncodableDocument): string {
  return emitDocument(documentNode(doc.kind, doc.apiVersion, doc.data));
}

/** A whole config as the Go encoder writes it. */
export function encodeConfig(docs: readonly EncodableDocument[]): string {
  const ordered = [...docs.filter((d) => d.kind === V1ALPHA1), ...docs.filter((d) => d.kind !== V1ALPHA1)];
  return ordered.map(encodeDocument).join("---\n");
}
