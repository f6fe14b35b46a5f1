/**
 * Kubernetes objects as plain data: reading a multi-document manifest into objects (upstream's Manifest adapter
 * SetYAML), the apply order (Namespaces, then CRDs, then the rest) and the object references of a cli-utils
 * inventory (`<namespace>_<name>_<group>_<kind>`, what siderolabs/go-kubernetes' ssa package and so
 * `talosctl upgrade-k8s` read back).
 */
import { parseAllDocuments } from "yaml";
import type { KubeObjectData } from "../resources/types/k8s-manifests.js";

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export function gvkOf(obj: KubeObjectData): GroupVersionKind {
  const apiVersion = typeof obj.apiVersion === "string" ? obj.apiVersion : "";
  const slash = apiVersion.indexOf("/");
  return {
    group: slash < 0 ? "" : apiVersion.slice(0, slash),
    version: slash < 0 ? apiVersion : apiVersion.slice(slash + 1),
    kind: typeof obj.kind === "string" ? obj.kind : "",
  };
}

export function metadataOf(obj: KubeObjectData): Record<string, unknown> {
  const m = obj.metadata;
  return typeof m === "object" && m !== null && !Array.isArray(m) ? (m as Record<string, unknown>) : {};
}

export function nameOf(obj: KubeObjectData): string {
  const n = metadataOf(obj).name;
  return typeof n === "string" ? n : "";
}

export function namespaceOf(obj: KubeObjectData): string {
  const n = metadataOf(obj).namespace;
  return typeof n === "string" ? n : "";
}

/** `group/version/Kind/name`, how upstream names an object in its apply errors and logs. */
export function describeObject(obj: KubeObjectData): string {
  const g = gvkOf(obj);
  return `${g.group}/${g.version}/${g.kind}/${nameOf(obj)}`;
}

/**
 * The objects of a YAML manifest: every non-empty document, a list (`kind: List`, any `items:`) unwrapped into its items. Documents
 * holding only comments are skipped. Read as YAML 1.1, the dialect Kubernetes' YAML decoder speaks.
 */
export function parseManifestYaml(text: string): KubeObjectData[] {
  const out: KubeObjectData[] = [];
  const docs = parseAllDocuments(text, { version: "1.1", merge: true, uniqueKeys: false });
  docs.forEach((doc, i) => {
    const where = `document ${i + 1}`;
    if (doc.errors.length > 0) throw new Error(`${where}: ${doc.errors[0].message}`);
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    if (value === null || value === undefined) return;
    if (typeof value !== "object" || Array.isArray(value)) throw new Error(`${where}: expected a Kubernetes object, got ${Array.isArray(value) ? "a list" : typeof value}`);
    const obj = value as KubeObjectData;
    if (Object.keys(obj).length === 0) return;
    // Like upstream (unstructured IsList): any object whose `items` is a list is a list of objects.
    if (Array.isArray(obj.items)) {
      obj.items.forEach((item, j) => out.push(checkObject(item, `${where}, item ${j + 1}`)));
      return;
    }
    out.push(checkObject(obj, where));
  });
  return out;
}

function checkObject(v: unknown, where: string): KubeObjectData {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error(`${where}: expected a Kubernetes object`);
  const obj = v as KubeObjectData;
  if (typeof obj.kind !== "string" || obj.kind === "") throw new Error(`${where}: Object 'Kind' is missing`);
  if (typeof obj.apiVersion !== "string" || obj.apiVersion === "") throw new Error(`${where}: Object 'apiVersion' is missing (kind ${obj.kind})`);
  return obj;
}

const isNamespace = (g: GroupVersionKind) => g.kind === "Namespace" && g.version === "v1";
const isCRD = (g: GroupVersionKind) => g.kind === "CustomResourceDefinition" && g.group === "apiextensions.k8s.io";

/**
 * Apply order: Namespaces (by name), then CustomResourceDefinitions (by name), so objects that live in them or
 * are of their kinds come after; everything else keeps its order (manifest id, then position). `of` picks the
 * object out of each element.
 */
export function applyOrder<T>(items: T[], of: (item: T) => KubeObjectData): T[] {
  const byName = (a: T, b: T) => {
    const x = nameOf(of(a));
    const y = nameOf(of(b));
    return x < y ? -1 : x > y ? 1 : 0;
  };
  const ns = items.filter((i) => isNamespace(gvkOf(of(i)))).sort(byName);
  const crds = items.filter((i) => isCRD(gvkOf(of(i)))).sort(byName);
  const rest = items.filter((i) => !isNamespace(gvkOf(of(i))) && !isCRD(gvkOf(of(i))));
  return [...ns, ...crds, ...rest];
}

// ------------------------------------------------------------------------------------------------ inventory

/** One object reference of a cli-utils inventory (fluxcd/cli-utils ObjMetadata). */
export interface ObjectRef {
  namespace: string;
  name: string;
  group: string;
  kind: string;
}

export function objectRef(obj: KubeObjectData): ObjectRef {
  const g = gvkOf(obj);
  return { namespace: namespaceOf(obj), name: nameOf(obj), group: g.group, kind: g.kind };
}

const RBAC_KINDS = new Set(["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"]);
const isRBAC = (r: Pick<ObjectRef, "group" | "kind">) => r.group === "rbac.authorization.k8s.io" && RBAC_KINDS.has(r.kind);

/**
 * The ConfigMap key of a reference: fields joined by `_`; an RBAC name's colons become `__` because a colon is not
 * allowed in a ConfigMap key (and `_` never appears in an object name, so the key parses back unambiguously).
 */
export function formatObjectRef(r: ObjectRef): string {
  const name = isRBAC(r) ? r.name.replaceAll(":", "__") : r.name;
  return `${r.namespace}_${name}_${r.group}_${r.kind}`;
}

/** Parses an inventory key; throws on a key with too few or too many fields. */
export function parseObjectRef(key: string): ObjectRef {
  const first = key.indexOf("_");
  if (first < 0) throw new Error(`unable to parse stored object metadata: ${key}`);
  const namespace = key.slice(0, first);
  let rest = key.slice(first + 1);
  const last = rest.lastIndexOf("_");
  if (last < 0) throw new Error(`unable to parse stored object metadata: ${key}`);
  const kind = rest.slice(last + 1);
  rest = rest.slice(0, last);
  const groupAt = rest.lastIndexOf("_");
  if (groupAt < 0) throw new Error(`unable to parse stored object metadata: ${key}`);
  const group = rest.slice(groupAt + 1);
  const name = rest.slice(0, groupAt).replaceAll("__", ":");
  if (name.includes("_")) throw new Error(`too many fields within: ${key}`);
  return { namespace, name, group, kind };
}
