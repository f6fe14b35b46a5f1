/**
 * Strategic merge patches: one or more YAML documents, each merged into the config document with the same
 * apiVersion/kind/name (the v1alpha1 patch document into the v1alpha1 document); a patch document without a match
 * is added to the config. `$patch: delete` directives (delete.ts) run before the merge of their document.
 */
import { classifyDocument } from "../decode.js";
import { documentId, V1ALPHA1 } from "../document.js";
import { ConfigError } from "../errors.js";
import { toConfigIssues } from "../issues.js";
import { v1alpha1Schema } from "../schema.js";
import { isPlainObject, stripNulls, type PlainObject } from "../tree.js";
import { applyDeletion, extractDeletes, type Deletion } from "./delete.js";
import { mergeDocument } from "./merge.js";

export interface DocIdentity {
  apiVersion: string;
  kind: string;
  name?: string;
}

export interface StrategicPatchDocument {
  id: DocIdentity;
  deletes: Deletion[];
  /** What is merged after the deletes; undefined when the document held only delete directives. */
  body?: PlainObject;
}

export interface StrategicPatch {
  type: "strategic";
  documents: StrategicPatchDocument[];
}

/** Builds a strategic patch from its decoded YAML documents (null documents already removed). */
export function strategicPatch(docs: readonly { value: unknown; line: number }[]): StrategicPatch {
  const documents = docs.map(({ value: raw, line }): StrategicPatchDocument => {
    if (!isPlainObject(raw)) throw new ConfigError(`patch document at line ${line}: expected a YAML map`);
    const { rest, deletes } = extractDeletes(raw);
    const probe = { ...raw };
    delete probe.$patch;
    const id = classifyDocument(probe, line);
    if (rest && id.kind === V1ALPHA1) {
      // Upstream decodes patches strictly too: a misspelt key fails here, not silently later.
      const input = stripNulls(rest);
      const res = v1alpha1Schema.safeParse(input);
      if (!res.success) throw new ConfigError(toConfigIssues(res.error.issues, input));
    }
    return { id: { apiVersion: id.apiVersion, kind: id.kind, name: id.name }, deletes, body: rest };
  });
  return { type: "strategic", documents };
}

export interface PlainDocument extends DocIdentity {
  data: PlainObject;
}

const idText = (id: DocIdentity) => `${id.apiVersion}/${id.kind}`;

/**
 * Upstream merges strategic patches into the decoded config, and its decoder trims the leading blank lines (tabs,
 * newlines, CR, VT, FF; not spaces) of every inline manifest's contents, in the config and in the patch alike, so
 * the patched output has them trimmed too (a `contents: |` block often starts with an empty line). The typed view
 * (schema/cluster.ts) applies the same rule; here it is applied to the plain trees the merge works on.
 */
function trimInlineManifests(kind: string, data: PlainObject): PlainObject {
  if (kind !== V1ALPHA1 || !isPlainObject(data.cluster) || !Array.isArray(data.cluster.inlineManifests)) return data;
  const manifests = data.cluster.inlineManifests.map((m) =>
    isPlainObject(m) && typeof m.contents === "string" ? { ...m, contents: m.contents.replace(/^[\t\n\v\f\r]+/, "") } : m,
  );
  return { ...data, cluster: { ...data.cluster, inlineManifests: manifests } };
}

/** Applies a strategic patch to config documents, returning new documents (inputs are not modified). */
export function applyStrategic(config: readonly PlainDocument[], patch: StrategicPatch): PlainDocument[] {
  let docs = config.map((d) => ({ ...d, data: trimInlineManifests(d.kind, structuredClone(d.data)) }));
  for (const pdoc of patch.documents) {
    const key = documentId(pdoc.id);
    const idx = docs.findIndex((d) => documentId(d) === key);
    for (const del of pdoc.deletes) {
      if (idx < 0) break; // deleting from a document that is not there is a no-op, as upstream
      if (del.kind === "document") docs = docs.filter((_, i) => i !== idx);
      else applyDeletion(docs[idx].data, del, idText(pdoc.id));
    }
    if (!pdoc.body) continue;
    const body = trimInlineManifests(pdoc.id.kind, pdoc.body);
    const target = docs.findIndex((d) => documentId(d) === key);
    if (target >= 0) docs[target] = { ...docs[target], data: mergeDocument(pdoc.id, docs[target].data, body) };
    else docs.push({ ...pdoc.id, data: structuredClone(body) });
  }
  return docs;
}
