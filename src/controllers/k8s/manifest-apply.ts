/**
 * k8s.ManifestApplyController: applies the Manifest resources to the cluster once, on control planes, when etcd is
 * healthy and the localhost admin kubeconfig exists; publishes ManifestStatus `manifests` after a clean run.
 *
 * Upstream semantics (manifest_apply.go): objects are flattened and ordered Namespaces, CRDs, the rest. An object
 * already in the inventory is skipped (so one deleted by hand is not re-created); one that exists in the cluster is
 * only added to the inventory; anything else is created by server-side apply as field manager `talos`, annotated
 * with the owning inventory. Existing objects are never updated or deleted here: `talosctl upgrade-k8s` syncs them,
 * reading the same Manifest resources and the same inventory ConfigMap (kube-system/talos-bootstrap-manifests-inventory,
 * in the cli-utils format siderolabs/go-kubernetes' ssa package uses).
 *
 * A bad manifest (unknown kind, rejected by the API) is collected and the rest still applied; the reconcile then
 * fails naming each one and retries. A connection failure stops the run (after saving the inventory) and retries.
 *
 * Several control planes: each run holds the etcd mutex `talos:v1:manifestApplyMutex` in the local etcd, as
 * upstream (src/supervisor/etcd/lock.ts: the same keys as Go's concurrency.Mutex, so mixed clusters queue on one
 * lock), with this node's etcd admin certificate. Without etcd certificates on this node there is no etcd of ours to
 * lock in, and the run goes unlocked; that stays safe because each step is idempotent (an apply of an object that
 * appeared meanwhile changes nothing: same manager, same fields) and the inventory is written with its
 * resourceVersion, re-read and merged on a conflict.
 */
import { kubeApi, KubeApiError, type KubeWriter, type KubeWriterFactory } from "../../host/kube/api.js";
import type { KubeObject } from "../../machinery/kubernetes/objects.js";
import {
  applyOrder,
  describeObject,
  formatObjectRef,
  metadataOf,
  nameOf,
  namespaceOf,
  objectRef,
  parseObjectRef,
  type ObjectRef,
} from "../../machinery/kubernetes/manifest-objects.js";
import { pointer, readAll, readSpec } from "../../machinery/resources/read.js";
import type { Resource } from "../../machinery/resources/resource.js";
import { CONTROLPLANE_NS, MANIFEST_STATUS_ID, ManifestStatusType, ManifestType, type KubeObjectData, type ManifestSpec } from "../../machinery/resources/types/k8s-manifests.js";
import { RUNTIME_NS, ServiceType } from "../../machinery/resources/types/runtime.js";
import { KubernetesCertsType, SECRET_IDS } from "../../machinery/resources/types/secrets.js";
import type { Controller } from "../../state/runtime/index.js";
import { EtcdClient } from "../../supervisor/etcd/client.js";
import { withLock } from "../../supervisor/etcd/lock.js";
import { EtcdCertsType, EtcdRootType } from "../../machinery/resources/types/secrets.js";
import { etcdPki } from "../etcd/service.js";

export const INVENTORY_NAMESPACE = "kube-system";
export const INVENTORY_NAME = "talos-bootstrap-manifests-inventory";
/** go-kubernetes ssa.InventoryAnnotationKey. */
export const INVENTORY_ANNOTATION = "config.k8s.io/owning-inventory";
export const FIELD_MANAGER = "talos";
/** upstream constants.EtcdTalosManifestApplyMutex. */
export const MANIFEST_APPLY_MUTEX = "talos:v1:manifestApplyMutex";

export interface ManifestApplyOptions {
  /** Builds the API client from the admin kubeconfig (tests pass an in-memory fake). */
  connect?: KubeWriterFactory;
  /** The local etcd the mutex lives in (default upstream's https://127.0.0.1:2379; tests use other ports). */
  etcdEndpoint?: string;
}

export function manifestApplyController(opts: ManifestApplyOptions = {}): Controller {
  const connect = opts.connect ?? ((kubeconfig: string) => kubeApi(kubeconfig));
  return {
    name: "k8s.ManifestApplyController",
    inputs: [
      { ...pointer(KubernetesCertsType, SECRET_IDS.k8sCerts), kind: "weak" },
      { namespace: CONTROLPLANE_NS, type: ManifestType.type, kind: "weak" },
      { namespace: RUNTIME_NS, type: ServiceType.type, id: "etcd", kind: "weak" },
      { ...pointer(EtcdRootType, SECRET_IDS.etcd), kind: "weak" },
      { ...pointer(EtcdCertsType, SECRET_IDS.etcd), kind: "weak" },
    ],
    outputs: [{ type: ManifestStatusType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const certs = readSpec(ctx, KubernetesCertsType, SECRET_IDS.k8sCerts);
      if (!certs?.localhostAdminKubeconfig) return;
      // The API server stores in this etcd; until it is healthy every request would fail.
      if (readSpec(ctx, ServiceType, "etcd", RUNTIME_NS)?.healthy !== true) return;
      const manifests = readAll(ctx, ManifestType, CONTROLPLANE_NS).sort((a, b) => (a.metadata.id < b.metadata.id ? -1 : a.metadata.id > b.metadata.id ? 1 : 0));
      if (manifests.length > 0) {
        const run = async (signal: AbortSignal) => {
          const client = connect(certs.localhostAdminKubeconfig);
          try {
            const res = await applyManifests(client, manifests, { signal, log: (msg) => ctx.log(msg) });
            if (res.created.length > 0) ctx.log("bootstrap manifests applied", { created: res.created.length });
          } finally {
            await client.close();
          }
        };
        const pki = etcdPki(ctx);
        if (!pki) await run(ctx.signal);
        else {
          const etcd = new EtcdClient(opts.etcdEndpoint ?? "https://127.0.0.1:2379", { ca: pki.ca, cert: pki.clientCert, key: pki.clientKey });
          try {
            await withLock(etcd, MANIFEST_APPLY_MUTEX, run, { signal: ctx.signal, log: (msg) => ctx.log(msg) });
          } finally {
            etcd.close();
          }
        }
      }
      ctx.apply({ ...pointer(ManifestStatusType, MANIFEST_STATUS_ID), spec: { manifestsApplied: manifests.map((m) => m.metadata.id) } });
    },
  };
}

export interface ApplyResult {
  /** Objects created by this run (`group/version/Kind/name`). */
  created: string[];
  /** Objects found in the cluster and added to the inventory. */
  adopted: string[];
}

interface Item {
  manifest: string;
  obj: KubeObjectData;
}

/** One apply pass over `manifests` (already in id order); throws naming every failure after saving the inventory. */
export async function applyManifests(
  client: KubeWriter,
  manifests: Resource<ManifestSpec>[],
  opts: { signal?: AbortSignal; log?: (msg: string) => void } = {},
): Promise<ApplyResult> {
  const { signal } = opts;
  const items: Item[] = manifests.flatMap((m) => m.spec.items.map((obj) => ({ manifest: m.metadata.id, obj: structuredClone(obj) })));
  const ordered = applyOrder(items, (i) => i.obj);

  const inv = await Inventory.load(client, signal);
  const result: ApplyResult = { created: [], adopted: [] };
  const bad: string[] = [];
  let fatal: Error | undefined;
  for (const { manifest, obj } of ordered) {
    const what = describeObject(obj);
    try {
      const outcome = await applyOne(client, inv, obj, signal);
      if (outcome === "created") {
        result.created.push(what);
        opts.log?.(`created ${what}`);
      } else if (outcome === "adopted") result.adopted.push(what);
    } catch (e) {
      if (e instanceof BadManifest) {
        bad.push(`${manifest}: ${e.message}`);
        continue;
      }
      fatal = new Error(`${manifest}: ${(e as Error).message}`);
      break;
    }
  }
  // Saved even after a failure half way, so the objects created so far are not taken for someone else's later.
  let saveError: Error | undefined;
  try {
    await inv.save(signal);
  } catch (e) {
    saveError = new Error(`updating inventory failed: ${(e as Error).message}`);
  }
  const errors = [...bad, ...(fatal ? [fatal.message] : []), ...(saveError ? [saveError.message] : [])];
  if (errors.length === 1) throw new Error(errors[0]);
  if (errors.length > 1) throw new Error(`${errors.length} errors occurred:\n${errors.map((e) => `\t* ${e}`).join("\n")}`);
  return result;
}

/** A problem with one object (not with the connection): reported, and the other objects still applied. */
class BadManifest extends Error {}

/** HTTP statuses that say the request (the manifest) is wrong rather than the cluster unreachable. */
const BAD_REQUEST_STATUSES = new Set([400, 404, 405, 422]);

async function applyOne(client: KubeWriter, inv: Inventory, obj: KubeObjectData, signal?: AbortSignal): Promise<"skipped" | "adopted" | "created"> {
  const what = describeObject(obj);
  const apiVersion = obj.apiVersion as string;
  const kind = obj.kind as string;
  let scope;
  try {
    scope = await client.resourceScope(apiVersion, kind, signal);
  } catch (e) {
    if (e instanceof KubeApiError && (e.status === 404 || e.status === 422)) throw new BadManifest(`error creating mapping for object ${what}: ${e.message}`);
    throw new Error(`error creating mapping for object ${what}: ${(e as Error).message}`);
  }
  if (!scope) throw new BadManifest(`error creating mapping for object ${what}: no matches for kind "${kind}" in version "${apiVersion}"`);
  const meta = metadataOf(obj);
  obj.metadata = meta;
  if (scope === "namespaced") {
    if (!namespaceOf(obj)) meta.namespace = "default";
  } else {
    // Talos 1.13 stored cluster-scoped objects under the namespace their manifest (wrongly) gave them.
    if (namespaceOf(obj) !== "" && inv.contains(objectRef(obj))) {
      inv.remove(objectRef(obj));
      return "skipped";
    }
    delete meta.namespace;
  }
  const ref = objectRef(obj);
  if (inv.contains(ref)) return "skipped";

  let existing: KubeObject | undefined;
  try {
    existing = await client.get({ apiVersion, kind, name: nameOf(obj), namespace: namespaceOf(obj) }, signal);
  } catch (e) {
    throw new Error(`error checking resource existence of ${what}: ${(e as Error).message}`);
  }
  if (existing) {
    // Created by someone else (or before the inventory existed): ours to track, not to change.
    inv.add(ref);
    return "adopted";
  }

  const annotations = { ...((meta.annotations as Record<string, string> | undefined) ?? {}) };
  const owner = annotations[INVENTORY_ANNOTATION];
  if (owner !== undefined && owner !== INVENTORY_NAME) throw new BadManifest(`unexpected foreign inventory annotation on ${what}`);
  annotations[INVENTORY_ANNOTATION] = INVENTORY_NAME;
  meta.annotations = annotations;
  try {
    await client.apply(obj as KubeObject, FIELD_MANAGER, signal);
  } catch (e) {
    if (e instanceof KubeApiError && BAD_REQUEST_STATUSES.has(e.status)) throw new BadManifest(`error creating ${what}: ${e.message}`);
    throw new Error(`error creating ${what}: ${(e as Error).message}`);
  }
  inv.add(ref);
  return "created";
}

/**
 * The inventory ConfigMap: one key per object reference, empty values. Created empty when missing (with its
 * namespace), as go-kubernetes does, so `talosctl upgrade-k8s` finds it; written back only when it changed.
 */
class Inventory {
  private readonly refs: Map<string, ObjectRef>;
  private readonly added = new Map<string, ObjectRef>();
  private readonly removed = new Set<string>();

  private constructor(
    private readonly client: KubeWriter,
    private current: KubeObject,
  ) {
    this.refs = Inventory.parse(current);
  }

  static async load(client: KubeWriter, signal?: AbortSignal): Promise<Inventory> {
    const nsKey = { apiVersion: "v1", kind: "Namespace", name: INVENTORY_NAMESPACE };
    if (!(await client.get(nsKey, signal))) {
      try {
        await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: INVENTORY_NAMESPACE } }, signal);
      } catch (e) {
        if (!(e instanceof KubeApiError && e.status === 409)) throw new Error(`failed to create inventory namespace: ${(e as Error).message}`);
      }
    }
    return new Inventory(client, await Inventory.fetch(client, signal));
  }

  private static async fetch(client: KubeWriter, signal?: AbortSignal): Promise<KubeObject> {
    const key = { apiVersion: "v1", kind: "ConfigMap", name: INVENTORY_NAME, namespace: INVENTORY_NAMESPACE };
    let cm: KubeObject | undefined;
    try {
      cm = await client.get(key, signal);
    } catch (e) {
      throw new Error(`failed to fetch the inventory configmap: ${(e as Error).message}`);
    }
    if (cm) return cm;
    try {
      return await client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: INVENTORY_NAME, namespace: INVENTORY_NAMESPACE } }, signal);
    } catch (e) {
      // Another control plane created it first.
      if (e instanceof KubeApiError && e.status === 409) {
        const again = await client.get(key, signal);
        if (again) return again;
      }
      throw new Error(`failed to create the inventory configmap: ${(e as Error).message}`);
    }
  }

  private static parse(cm: KubeObject): Map<string, ObjectRef> {
    const out = new Map<string, ObjectRef>();
    const data = (cm.data as Record<string, string> | undefined) ?? {};
    for (const key of Object.keys(data)) {
      let ref: ObjectRef;
      try {
        ref = parseObjectRef(key);
      } catch (e) {
        throw new Error(`failed to parse object metadata in the inventory: ${(e as Error).message}`);
      }
      out.set(formatObjectRef(ref), ref);
    }
    return out;
  }

  contains(ref: ObjectRef): boolean {
    return this.refs.has(formatObjectRef(ref));
  }

  add(ref: ObjectRef): void {
    const k = formatObjectRef(ref);
    this.refs.set(k, ref);
    this.added.set(k, ref);
    this.removed.delete(k);
  }

  remove(ref: ObjectRef): void {
    const k = formatObjectRef(ref);
    this.refs.delete(k);
    this.added.delete(k);
    this.removed.add(k);
  }

  /** Writes the changes with the resourceVersion read; on a conflict re-reads, re-applies them and tries again. */
  async save(signal?: AbortSignal): Promise<void> {
    if (this.added.size === 0 && this.removed.size === 0) return;
    for (let attempt = 0; ; attempt++) {
      const cm = this.current;
      const meta = { ...(cm.metadata ?? {}) };
      const next: KubeObject = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: INVENTORY_NAME,
          namespace: INVENTORY_NAMESPACE,
          ...(meta.labels ? { labels: meta.labels } : {}),
          ...(meta.annotations ? { annotations: meta.annotations } : {}),
          ...(meta.resourceVersion ? { resourceVersion: meta.resourceVersion } : {}),
        },
        data: Object.fromEntries([...this.refs.keys()].map((k) => [k, ""])),
      };
      try {
        this.current = await this.client.update(next, signal);
        this.added.clear();
        this.removed.clear();
        return;
      } catch (e) {
        if (!(e instanceof KubeApiError && e.status === 409) || attempt >= 4) throw e;
      }
      this.current = await Inventory.fetch(this.client, signal);
      this.refs.clear();
      for (const [k, r] of Inventory.parse(this.current)) this.refs.set(k, r);
      for (const k of this.removed) this.refs.delete(k);
      for (const [k, r] of this.added) this.refs.set(k, r);
    }
  }
}
