/**
 * A small Kubernetes API client for machined's own needs (applying the bootstrap manifests, the inventory
 * ConfigMap), over @kubernetes/client-node: it loads the kubeconfig and authenticates (client certificates,
 * tokens, TLS settings) and sends the requests with its HTTP stack. Object bodies go out as the exact JSON given:
 * client-node's typed serializers would drop fields its models do not know, and a server-side apply must carry
 * the manifest as written. Controllers use the KubernetesClient interface; tests use an in-memory fake.
 */
import { HttpMethod, IsomorphicFetchHttpLibrary, KubeConfig, RequestContext, type ResponseContext } from "@kubernetes/client-node";

/** An object as the API serves it: `apiVersion`, `kind`, `metadata` and whatever else its kind has. */
export type KubeObject = Record<string, unknown> & { apiVersion: string; kind: string; metadata?: KubeMetadata };

export interface KubeMetadata {
  name?: string;
  namespace?: string;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  resourceVersion?: string;
  [k: string]: unknown;
}

export interface ObjectKey {
  apiVersion: string;
  kind: string;
  name: string;
  /** Empty for cluster-scoped kinds. */
  namespace?: string;
}

export type ResourceScope = "namespaced" | "cluster";

/** The API server answered with an error status (a Kubernetes Status: reason such as NotFound, Invalid, Conflict). */
export class KubernetesApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = "KubernetesApiError";
  }
}

/** The API server could not be reached (refused, reset, TLS failure, timeout). */
export class KubernetesConnectionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "KubernetesConnectionError";
  }
}

export interface KubernetesClient {
  /** How the API serves `kind` of `apiVersion`; undefined when it serves no such kind (or no such group version). */
  resourceScope(apiVersion: string, kind: string, signal?: AbortSignal): Promise<ResourceScope | undefined>;
  /** The object, or undefined when it does not exist. */
  get(key: ObjectKey, signal?: AbortSignal): Promise<KubeObject | undefined>;
  /** Server-side apply of `obj` as `fieldManager` (no force: conflicting field owners are an error). */
  apply(obj: KubeObject, fieldManager: string, signal?: AbortSignal): Promise<KubeObject>;
  create(obj: KubeObject, signal?: AbortSignal): Promise<KubeObject>;
  /** Replace; with `metadata.resourceVersion` set, a concurrent change makes it fail with 409 Conflict. */
  update(obj: KubeObject, signal?: AbortSignal): Promise<KubeObject>;
  /** Deletes the object; false when it did not exist. */
  delete(key: ObjectKey, signal?: AbortSignal): Promise<boolean>;
  /** Releases the connections. */
  close(): Promise<void>;
}

export type KubernetesClientFactory = (kubeconfig: string) => KubernetesClient;

/** A client for the current context of a kubeconfig given as YAML text. Throws when the kubeconfig is unusable. */
export function kubernetesClient(kubeconfig: string, opts: { timeoutMs?: number } = {}): KubernetesClient {
  const kc = new KubeConfig();
  try {
    kc.loadFromString(kubeconfig);
  } catch (e) {
    throw new Error(`invalid kubeconfig: ${(e as Error).message}`);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster?.server) throw new Error("invalid kubeconfig: the current context names no cluster with a server");
  return new HttpKubernetesClient(kc, cluster.server.replace(/\/+$/, ""), opts.timeoutMs ?? 30_000);
}

interface ApiResourceList {
  resources?: { name: string; kind: string; namespaced: boolean }[];
}

class HttpKubernetesClient implements KubernetesClient {
  private readonly http = new IsomorphicFetchHttpLibrary();
  /** Authentication is resolved once per client, so every request shares one connection pool. */
  private auth?: Promise<{ headers: Record<string, string>; dispatcher: ReturnType<RequestContext["getDispatcher"]> }>;
  private readonly discovery = new Map<string, Map<string, { resource: string; scope: ResourceScope }>>();

  constructor(
    private readonly kc: KubeConfig,
    private readonly server: string,
    private readonly timeoutMs: number,
  ) {}

  async resourceScope(apiVersion: string, kind: string, signal?: AbortSignal): Promise<ResourceScope | undefined> {
    return (await this.resource(apiVersion, kind, signal))?.scope;
  }

  async get(key: ObjectKey, signal?: AbortSignal): Promise<KubeObject | undefined> {
    // A kind the server does not serve is an error, not a missing object.
    const path = await this.objectPath(key, true, signal);
    try {
      return (await this.request("GET", path, undefined, signal)) as KubeObject;
    } catch (e) {
      if (e instanceof KubernetesApiError && e.status === 404) return undefined;
      throw e;
    }
  }

  async apply(obj: KubeObject, fieldManager: string, signal?: AbortSignal): Promise<KubeObject> {
    const path = await this.objectPath(keyOf(obj), true, signal);
    return (await this.request("PATCH", `${path}?fieldManager=${encodeURIComponent(fieldManager)}`, obj, signal, "application/apply-patch+yaml")) as KubeObject;
  }

  async create(obj: KubeObject, signal?: AbortSignal): Promise<KubeObject> {
    return (await this.request("POST", await this.objectPath(keyOf(obj), false, signal), obj, signal)) as KubeObject;
  }

  async update(obj: KubeObject, signal?: AbortSignal): Promise<KubeObject> {
    return (await this.request("PUT", await this.objectPath(keyOf(obj), true, signal), obj, signal)) as KubeObject;
  }

  async delete(key: ObjectKey, signal?: AbortSignal): Promise<boolean> {
    const path = await this.objectPath(key, true, signal);
    try {
      await this.request("DELETE", path, undefined, signal);
      return true;
    } catch (e) {
      if (e instanceof KubernetesApiError && e.status === 404) return false;
      throw e;
    }
  }

  async close(): Promise<void> {
    const auth = await this.auth?.catch(() => undefined);
    await (auth?.dispatcher as { close?: () => Promise<void> } | undefined)?.close?.();
  }

  /** Discovery of one group version (cached; fetched again when a kind is missing, e.g. a CRD just created). */
  private async resource(apiVersion: string, kind: string, signal?: AbortSignal) {
    const cached = this.discovery.get(apiVersion)?.get(kind);
    if (cached) return cached;
    const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    let list: ApiResourceList;
    try {
      list = (await this.request("GET", base, undefined, signal)) as ApiResourceList;
    } catch (e) {
      if (e instanceof KubernetesApiError && e.status === 404) return undefined;
      throw e;
    }
    const kinds = new Map<string, { resource: string; scope: ResourceScope }>();
    for (const r of list.resources ?? []) {
      if (r.name.includes("/")) continue; // subresources (pods/status, ...)
      kinds.set(r.kind, { resource: r.name, scope: r.namespaced ? "namespaced" : "cluster" });
    }
    this.discovery.set(apiVersion, kinds);
    return kinds.get(kind);
  }

  private async objectPath(key: ObjectKey, withName: boolean, signal?: AbortSignal): Promise<string> {
    const r = await this.resource(key.apiVersion, key.kind, signal);
    if (!r) throw new KubernetesApiError(404, "NoKindMatch", `the server does not serve kind ${key.kind} in ${key.apiVersion}`);
    const base = key.apiVersion.includes("/") ? `/apis/${key.apiVersion}` : `/api/${key.apiVersion}`;
    const ns = r.scope === "namespaced" ? `/namespaces/${encodeURIComponent(key.namespace || "default")}` : "";
    return `${base}${ns}/${r.resource}${withName ? `/${encodeURIComponent(key.name)}` : ""}`;
  }

  private async request(method: HttpMethod, path: string, body: unknown, signal?: AbortSignal, contentType = "application/json"): Promise<unknown> {
    const url = `${this.server}${path}`;
    this.auth ??= (async () => {
      const probe = new RequestContext(this.server, HttpMethod.GET);
      await this.kc.applySecurityAuthentication(probe);
      return { headers: probe.getHeaders(), dispatcher: probe.getDispatcher() };
    })();
    const auth = await this.auth;
    const ctx = new RequestContext(url, method);
    for (const [k, v] of Object.entries(auth.headers)) ctx.setHeaderParam(k, v);
    if (auth.dispatcher) ctx.setDispatcher(auth.dispatcher);
    ctx.setHeaderParam("Accept", "application/json");
    if (body !== undefined) {
      ctx.setHeaderParam("Content-Type", contentType);
      ctx.setBody(JSON.stringify(body));
    }
    const timeout = AbortSignal.timeout(this.timeoutMs);
    ctx.setSignal(signal ? AbortSignal.any([signal, timeout]) : timeout);
    let res: ResponseContext;
    let text: string;
    try {
      res = await this.http.send(ctx).toPromise();
      text = await res.body.text();
    } catch (e) {
      if (signal?.aborted) throw e;
      const err = e as Error & { cause?: { message?: string; code?: string } };
      const cause = err.cause?.code ?? err.cause?.message ?? err.message;
      throw new KubernetesConnectionError(`${method} ${url}: ${timeout.aborted ? `no answer within ${this.timeoutMs} ms` : cause}`);
    }
    if (res.httpStatusCode >= 200 && res.httpStatusCode < 300) return text ? JSON.parse(text) : {};
    let status: { reason?: string; message?: string } = {};
    try {
      status = JSON.parse(text) as typeof status;
    } catch {
      status = { message: text.trim() };
    }
    throw new KubernetesApiError(res.httpStatusCode, status.reason ?? "", `${method} ${path}: ${status.message || `HTTP ${res.httpStatusCode}`}`);
  }
}

function keyOf(obj: KubeObject): ObjectKey {
  return { apiVersion: obj.apiVersion, kind: obj.kind, name: obj.metadata?.name ?? "", namespace: obj.metadata?.namespace };
}
