/**
 * An in-memory stand-in for the Kubernetes API behind the KubeWriter interface, for controller tests: built-in
 * kinds plus the kinds of CRDs applied to it, objects with resourceVersions (an update with a stale one is a 409),
 * server-side apply recorded with its field manager, and hooks to make requests fail like an unreachable or
 * validating API server. The real client is exercised against a real kube-apiserver in the integration test.
 */
import {
  KubeApiError,
  KubeConnectionError,
  type KubeWriter,
  type ObjectKey,
  type ResourceScope,
} from "../../src/host/kube/api.js";
import type { KubeObject } from "../../src/machinery/kubernetes/objects.js";

const BUILTIN: [string, string, ResourceScope][] = [
  ["v1", "Namespace", "cluster"],
  ["v1", "Node", "cluster"],
  ["v1", "ConfigMap", "namespaced"],
  ["v1", "Secret", "namespaced"],
  ["v1", "Service", "namespaced"],
  ["v1", "ServiceAccount", "namespaced"],
  ["apps/v1", "Deployment", "namespaced"],
  ["apps/v1", "DaemonSet", "namespaced"],
  ["rbac.authorization.k8s.io/v1", "ClusterRole", "cluster"],
  ["rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "cluster"],
  ["rbac.authorization.k8s.io/v1", "Role", "namespaced"],
  ["rbac.authorization.k8s.io/v1", "RoleBinding", "namespaced"],
  ["apiextensions.k8s.io/v1", "CustomResourceDefinition", "cluster"],
];

export interface Call {
  verb: "scope" | "get" | "apply" | "create" | "update" | "delete";
  key: string;
  fieldManager?: string;
}

export class FakeKubernetes {
  readonly kinds = new Map<string, ResourceScope>(BUILTIN.map(([v, k, s]) => [`${v}/${k}`, s]));
  readonly objects = new Map<string, KubeObject>();
  readonly calls: Call[] = [];
  /** While true every request fails as if the API server were not listening. */
  down = false;
  /** Rejects an apply (e.g. a 422 Invalid) as API validation would. */
  reject?: (obj: KubeObject) => KubeApiError | undefined;
  /** Runs before an update is checked (a concurrent writer can change the object here). */
  beforeUpdate?: (obj: KubeObject) => void;
  clientsOpened = 0;
  clientsClosed = 0;
  private rv = 0;

  /** A client over this API (what the controller's connect option returns). */
  client(): KubeWriter {
    this.clientsOpened++;
    return {
      resourceScope: async (apiVersion, kind) => {
        this.check("scope", `${apiVersion}/${kind}`);
        return this.kinds.get(`${apiVersion}/${kind}`);
      },
      get: async (key) => {
        this.check("get", this.keyOf(key));
        const o = this.objects.get(this.keyOf(key));
        return o ? structuredClone(o) : undefined;
      },
      apply: async (obj, fieldManager) => {
        const key = this.keyOf(keyOf(obj));
        this.check("apply", key, fieldManager);
        const err = this.reject?.(obj);
        if (err) throw err;
        const existing = this.objects.get(key);
        const stored = this.store(key, obj, existing);
        stored.metadata!.managedFields = [{ manager: fieldManager, operation: "Apply" }];
        if (obj.kind === "CustomResourceDefinition") this.serveCRD(obj);
        return structuredClone(stored);
      },
      create: async (obj) => {
        const key = this.keyOf(keyOf(obj));
        this.check("create", key);
        if (this.objects.has(key)) throw new KubeApiError(409, "AlreadyExists", `${key} already exists`);
        return structuredClone(this.store(key, obj, undefined));
      },
      update: async (obj) => {
        const key = this.keyOf(keyOf(obj));
        this.check("update", key);
        this.beforeUpdate?.(obj);
        const existing = this.objects.get(key);
        if (!existing) throw new KubeApiError(404, "NotFound", `${key} not found`);
        const want = obj.metadata?.resourceVersion;
        if (want && want !== existing.metadata?.resourceVersion) {
          throw new KubeApiError(409, "Conflict", `Operation cannot be fulfilled on ${key}: the object has been modified`);
        }
        return structuredClone(this.store(key, obj, existing));
      },
      delete: async (key) => {
        this.check("delete", this.keyOf(key));
        return this.objects.delete(this.keyOf(key));
      },
      close: async () => {
        this.clientsClosed++;
      },
    };
  }

  /** Puts an object into the cluster as someone other than machined. */
  put(obj: KubeObject): void {
    this.store(this.keyOf(keyOf(obj)), obj, this.objects.get(this.keyOf(keyOf(obj))));
  }

  getObject(apiVersion: string, kind: string, name: string, namespace = ""): KubeObject | undefined {
    return this.objects.get(this.keyOf({ apiVersion, kind, name, namespace }));
  }

  delete(apiVersion: string, kind: string, name: string, namespace = ""): void {
    this.objects.delete(this.keyOf({ apiVersion, kind, name, namespace }));
  }

  /** The inventory ConfigMap's keys, sorted. */
  inventory(): string[] {
    const cm = this.getObject("v1", "ConfigMap", "talos-bootstrap-manifests-inventory", "kube-system");
    return Object.keys((cm?.data as Record<string, string> | undefined) ?? {}).sort();
  }

  applied(): string[] {
    return this.calls.filter((c) => c.verb === "apply").map((c) => c.key);
  }

  private check(verb: Call["verb"], key: string, fieldManager?: string): void {
    if (this.down) throw new KubeConnectionError(`${verb} ${key}: connect ECONNREFUSED 127.0.0.1:6443`);
    this.calls.push({ verb, key, fieldManager });
  }

  private keyOf(k: ObjectKey): string {
    const scope = this.kinds.get(`${k.apiVersion}/${k.kind}`);
    if (!scope) throw new KubeApiError(404, "NoKindMatch", `the server does not serve kind ${k.kind} in ${k.apiVersion}`);
    const ns = scope === "namespaced" ? (k.namespace || "default") : "";
    return `${k.apiVersion}/${k.kind}/${ns ? `${ns}/` : ""}${k.name}`;
  }

  private store(key: string, obj: KubeObject, existing: KubeObject | undefined): KubeObject {
    const copy = structuredClone(obj);
    copy.metadata = { ...(copy.metadata ?? {}), resourceVersion: String(++this.rv), uid: (existing?.metadata?.uid as string | undefined) ?? `uid-${this.rv}` };
    this.objects.set(key, copy);
    return copy;
  }

  private serveCRD(crd: KubeObject): void {
    const spec = crd.spec as { group: string; scope: string; names: { kind: string }; versions: { name: string; served: boolean }[] };
    for (const v of spec.versions) if (v.served) this.kinds.set(`${spec.group}/${v.name}/${spec.names.kind}`, spec.scope === "Namespaced" ? "namespaced" : "cluster");
  }
}

function keyOf(obj: KubeObject): ObjectKey {
  if (!obj.apiVersion || !obj.kind) throw new KubeApiError(400, "BadRequest", `object ${JSON.stringify(obj.metadata?.name ?? "")} has no apiVersion or kind`);
  return { apiVersion: obj.apiVersion, kind: obj.kind, name: obj.metadata?.name ?? "", namespace: obj.metadata?.namespace };
}
