/**
 * machined's Kubernetes API client, one for reading and writing: list a kind (with label and field selectors)
 * and watch it from a resource version (KubeApi: the status controllers, `talosctl health`), and get, server-side
 * apply, create, replace and delete objects of any kind the server serves, found by discovery (KubeWriter: the
 * bootstrap manifests, the Node's labels and taints). The real client loads a kubeconfig with
 * @kubernetes/client-node (client certificates, tokens, CA, TLS server name) and sends its requests through
 * client-node's HTTP stack, one connection pool per client. Object bodies go out as the exact JSON given:
 * client-node's typed serializers would drop fields its models do not know, and a server-side apply must carry
 * the manifest as written. Errors read like client-go's, because talosctl shows them verbatim. In-memory stand-ins
 * for tests: MemoryKubeApi (memory.ts) for reads, test/helpers/fake-kubernetes.ts for writes.
 */
import { HttpMethod, IsomorphicFetchHttpLibrary, KubeConfig, RequestContext, type ResponseContext } from "@kubernetes/client-node";
import { collectionPath, type KubeKind, type KubeObject } from "../../machinery/kubernetes/objects.js";

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface WatchOptions extends ListOptions {
  /** Changes after this version are streamed. */
  resourceVersion: string;
  /** The server ends the watch after this long (default 300). */
  timeoutSeconds?: number;
}

export interface KubeList<T> {
  items: T[];
  resourceVersion: string;
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";

export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

export interface ObjectKey {
  apiVersion: string;
  kind: string;
  name: string;
  /** Empty for cluster-scoped kinds. */
  namespace?: string;
}

export type ResourceScope = "namespaced" | "cluster";

/** Writing (and reading single objects of) any kind, by apiVersion and kind. */
export interface KubeWriter {
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

export type KubeWriterFactory = (kubeconfig: string) => KubeWriter;

export interface KubeApi {
  /** The API server URL, e.g. `https://10.5.0.2:6443`. */
  readonly server: string;
  list<T extends KubeObject>(kind: KubeKind, opts?: ListOptions, signal?: AbortSignal): Promise<KubeList<T>>;
  /**
   * Streams the changes after `opts.resourceVersion` to `onEvent` until the server ends the watch (resolves) or it
   * fails (rejects; a KubeApiError with status 410 when that version is too old to watch from).
   */
  watch<T extends KubeObject>(kind: KubeKind, opts: WatchOptions, onEvent: (e: WatchEvent<T>) => void, signal?: AbortSignal): Promise<void>;
  /** Ends every request in flight and releases the connections. */
  close(): Promise<void>;
}

/** The API server answered with an error Status (reason such as NotFound, Forbidden, Conflict, Invalid, Expired). */
export class KubeApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = "KubeApiError";
  }
}

/** The API server could not be reached (refused, reset, TLS failure, timeout). */
export class KubeConnectionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "KubeConnectionError";
  }
}

export interface KubeApiOptions {
  /** Per-request timeout of lists, in ms (default 30 s). */
  timeoutMs?: number;
  /** Replaces the kubeconfig's server (upstream's ForceEndpoint): `host`, `host:port` or `https://host:port`. */
  forceEndpoint?: string;
}

export type KubeApiFactory = (kubeconfig: string, opts?: KubeApiOptions) => KubeApi;

/** Both sides of the real client. */
export type KubeClient = KubeApi & KubeWriter;

/** A client for the current context of `kubeconfig` (YAML text). Throws, naming the problem, when it is unusable. */
export function kubeApi(kubeconfig: string, opts: KubeApiOptions = {}): KubeClient {
  const kc = new KubeConfig();
  try {
    kc.loadFromString(kubeconfig);
  } catch (e) {
    throw new Error(`invalid kubeconfig: ${(e as Error).message}`);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster?.server) throw new Error("invalid kubeconfig: the current context names no cluster with a server");
  if (opts.forceEndpoint) {
    const server = forcedServer(opts.forceEndpoint);
    kc.loadFromOptions({
      clusters: kc.clusters.map((c) => (c.name === cluster.name ? { ...c, server } : c)),
      users: kc.users,
      contexts: kc.contexts,
      currentContext: kc.currentContext,
    });
  }
  return new HttpKubeApi(kc, kc.getCurrentCluster()!.server.replace(/\/+$/, ""), opts.timeoutMs ?? 30_000);
}

/** `https://host:port` from a forced endpoint (upstream: SplitHostPort, else the whole text and port 6443). */
export function forcedServer(endpoint: string): string {
  const hp = endpoint.replace(/^https:\/\//, "").replace(/\/+$/, "");
  let host = hp;
  let port = "6443";
  const bracket = /^\[([^\]]+)\]:(\d+)$/.exec(hp);
  if (bracket) [host, port] = [bracket[1], bracket[2]];
  else if (hp.split(":").length === 2) [host, port] = hp.split(":") as [string, string];
  else if (/^\[[^\]]+\]$/.test(hp)) host = hp.slice(1, -1);
  return `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

type Auth = { headers: Record<string, string>; dispatcher: ReturnType<RequestContext["getDispatcher"]> };

interface ApiResourceList {
  resources?: { name: string; kind: string; namespaced: boolean }[];
}

class HttpKubeApi implements KubeApi, KubeWriter {
  private readonly http = new IsomorphicFetchHttpLibrary();
  /** Resolved once: client-node makes a new connection pool per authentication, so every request shares this one. */
  private auth?: Promise<Auth>;
  private readonly inflight = new Set<AbortController>();
  private closed = false;
  private readonly discovery = new Map<string, Map<string, { resource: string; scope: ResourceScope }>>();

  constructor(
    private readonly kc: KubeConfig,
    readonly server: string,
    private readonly timeoutMs: number,
  ) {}

  async list<T extends KubeObject>(kind: KubeKind, opts: ListOptions = {}, signal?: AbortSignal): Promise<KubeList<T>> {
    const url = this.url(kind, opts, {});
    return this.request("GET", url, undefined, this.timeoutMs, signal, async (res, text) => {
      const body = await text();
      if (res.httpStatusCode !== 200) throw statusError(res.httpStatusCode, body);
      const list = JSON.parse(body) as { items?: T[]; metadata?: { resourceVersion?: string } };
      return { items: list.items ?? [], resourceVersion: list.metadata?.resourceVersion ?? "" };
    });
  }

  async watch<T extends KubeObject>(kind: KubeKind, opts: WatchOptions, onEvent: (e: WatchEvent<T>) => void, signal?: AbortSignal): Promise<void> {
    const timeoutSeconds = opts.timeoutSeconds ?? 300;
    const url = this.url(kind, opts, {
      watch: "1",
      resourceVersion: opts.resourceVersion,
      allowWatchBookmarks: "true",
      timeoutSeconds: String(timeoutSeconds),
    });
    // The server ends the watch itself; the local limit only catches a server that went silent.
    await this.request("GET", url, undefined, (timeoutSeconds + 30) * 1000, signal, async (res, text, ended) => {
      if (res.httpStatusCode !== 200) throw statusError(res.httpStatusCode, await text());
      const stream = res.body.stream() as ReadableStream<Uint8Array> | null | undefined;
      if (!stream) return;
      const reader = stream.getReader();
      const decoder = new TextDecoder();
      let buf = "";
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          buf += decoder.decode(value, { stream: true });
          let nl: number;
          while ((nl = buf.indexOf("\n")) >= 0) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (line === "") continue;
            const e = JSON.parse(line) as { type: string; object: KubeObject & { code?: number; reason?: string; message?: string } };
            if (e.type === "ERROR") throw new KubeApiError(e.object.code ?? 500, e.object.reason ?? "", e.object.message ?? "watch error");
            onEvent(e as WatchEvent<T>);
          }
        }
      } catch (e) {
        if (e instanceof KubeApiError || e instanceof SyntaxError) throw e;
        // Stopped by the caller or by close(): the watch just ends.
        if (ended()) return;
        throw connectionError("GET", url, e);
      } finally {
        reader.cancel().catch(() => {});
      }
    });
  }

  async resourceScope(apiVersion: string, kind: string, signal?: AbortSignal): Promise<ResourceScope | undefined> {
    return (await this.resource(apiVersion, kind, signal))?.scope;
  }

  async get(key: ObjectKey, signal?: AbortSignal): Promise<KubeObject | undefined> {
    // A kind the server does not serve is an error, not a missing object.
    const path = await this.objectPath(key, true, signal);
    try {
      return (await this.send("GET", path, undefined, signal)) as KubeObject;
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return undefined;
      throw e;
    }
  }

  async apply(obj: KubeObject, fieldManager: string, signal?: AbortSignal): Promise<KubeObject> {
    const path = await this.objectPath(keyOf(obj), true, signal);
    return (await this.send("PATCH", `${path}?fieldManager=${encodeURIComponent(fieldManager)}`, obj, signal, "application/apply-patch+yaml")) as KubeObject;
  }

  async create(obj: KubeObject, signal?: AbortSignal): Promise<KubeObject> {
    return (await this.send("POST", await this.objectPath(keyOf(obj), false, signal), obj, signal)) as KubeObject;
  }

  async update(obj: KubeObject, signal?: AbortSignal): Promise<KubeObject> {
    return (await this.send("PUT", await this.objectPath(keyOf(obj), true, signal), obj, signal)) as KubeObject;
  }

  async delete(key: ObjectKey, signal?: AbortSignal): Promise<boolean> {
    const path = await this.objectPath(key, true, signal);
    try {
      await this.send("DELETE", path, undefined, signal);
      return true;
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return false;
      throw e;
    }
  }

  /** Discovery of one group version (cached; fetched again when a kind is missing, e.g. a CRD just created). */
  private async resource(apiVersion: string, kind: string, signal?: AbortSignal) {
    const cached = this.discovery.get(apiVersion)?.get(kind);
    if (cached) return cached;
    const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    let list: ApiResourceList;
    try {
      list = (await this.send("GET", base, undefined, signal)) as ApiResourceList;
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return undefined;
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
    if (!r) throw new KubeApiError(404, "NoKindMatch", `the server does not serve kind ${key.kind} in ${key.apiVersion}`);
    const base = key.apiVersion.includes("/") ? `/apis/${key.apiVersion}` : `/api/${key.apiVersion}`;
    const ns = r.scope === "namespaced" ? `/namespaces/${encodeURIComponent(key.namespace || "default")}` : "";
    return `${base}${ns}/${r.resource}${withName ? `/${encodeURIComponent(key.name)}` : ""}`;
  }

  /** One request with a JSON answer (an empty body is `{}`). */
  private send(method: HttpMethod | `${HttpMethod}`, path: string, body: unknown, signal?: AbortSignal, contentType = "application/json"): Promise<unknown> {
    return this.request(method as HttpMethod, `${this.server}${path}`, body === undefined ? undefined : { text: JSON.stringify(body), contentType }, this.timeoutMs, signal, async (res, text) => {
      const t = await text();
      if (res.httpStatusCode < 200 || res.httpStatusCode >= 300) throw statusError(res.httpStatusCode, t);
      return t ? (JSON.parse(t) as unknown) : {};
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const ac of this.inflight) ac.abort(new Error("client is closed"));
    const auth = await this.auth?.catch(() => undefined);
    await (auth?.dispatcher as { destroy?: () => Promise<void> } | undefined)?.destroy?.();
  }

  private url(kind: KubeKind, opts: ListOptions, extra: Record<string, string>): string {
    const q = new URLSearchParams();
    if (opts.labelSelector) q.set("labelSelector", opts.labelSelector);
    if (opts.fieldSelector) q.set("fieldSelector", opts.fieldSelector);
    for (const [k, v] of Object.entries(extra)) q.set(k, v);
    const qs = q.toString();
    return `${this.server}${collectionPath(kind, opts.namespace)}${qs ? `?${qs}` : ""}`;
  }

  /**
   * One request from sending to the end of reading its body (`use`): aborted by the caller's signal, by the time
   * limit, or by close(). Each request has its own controller, so nothing accumulates on a long-lived client.
   */
  private async request<R>(
    method: HttpMethod,
    url: string,
    body: { text: string; contentType: string } | undefined,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    use: (res: ResponseContext, text: () => Promise<string>, ended: () => boolean) => Promise<R>,
  ): Promise<R> {
    if (this.closed) throw new Error(`${goVerb(method)} ${JSON.stringify(url)}: client is closed`);
    if (signal?.aborted) throw signal.reason ?? new Error("aborted");
    this.auth ??= (async () => {
      const probe = new RequestContext(this.server, HttpMethod.GET);
      await this.kc.applySecurityAuthentication(probe);
      return { headers: probe.getHeaders(), dispatcher: probe.getDispatcher() };
    })();
    const auth = await this.auth;
    const ac = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort(new Error("context deadline exceeded"));
    }, timeoutMs);
    const onAbort = () => ac.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    this.inflight.add(ac);
    const ended = () => !timedOut && ac.signal.aborted;
    const fail = (e: unknown): never => {
      if (signal?.aborted) throw signal.reason ?? e;
      throw connectionError(method, url, timedOut ? new Error("context deadline exceeded") : e);
    };
    try {
      const ctx = new RequestContext(url, method);
      for (const [k, v] of Object.entries(auth.headers)) ctx.setHeaderParam(k, v);
      if (auth.dispatcher) ctx.setDispatcher(auth.dispatcher);
      ctx.setHeaderParam("Accept", "application/json");
      if (body) {
        ctx.setHeaderParam("Content-Type", body.contentType);
        ctx.setBody(body.text);
      }
      ctx.setSignal(ac.signal);
      let res: ResponseContext;
      try {
        res = await this.http.send(ctx).toPromise();
      } catch (e) {
        return fail(e);
      }
      const text = async () => {
        try {
          return await res.body.text();
        } catch (e) {
          return fail(e);
        }
      };
      return await use(res, text, ended);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      this.inflight.delete(ac);
    }
  }
}

function statusError(code: number, text: string): KubeApiError {
  let status: { reason?: string; message?: string; code?: number } = {};
  try {
    status = JSON.parse(text) as typeof status;
  } catch {
    // Not a Status object: client-go's wording for a bare error code.
  }
  const message = status.message || `the server responded with the status code ${code} but did not return more information`;
  return new KubeApiError(code, status.reason ?? "", message);
}

/** `Get "https://10.5.0.2:6443/api/v1/nodes": dial tcp 10.5.0.2:6443: connect: connection refused`, as Go says it. */
export function connectionError(method: string, url: string, e: unknown): KubeConnectionError {
  const err = e as Error & { cause?: Error & { code?: string } };
  const cause = err.cause ?? err;
  const u = new URL(url);
  const hostPort = `${u.hostname}:${u.port || (u.protocol === "https:" ? "443" : "80")}`.replace(/^\[?([^\]]*:[^\]]*)\]?:(\d+)$/, "[$1]:$2");
  const verb = goVerb(method);
  let why: string;
  switch ((cause as { code?: string }).code) {
    case "ECONNREFUSED":
      why = `dial tcp ${hostPort}: connect: connection refused`;
      break;
    case "EHOSTUNREACH":
      why = `dial tcp ${hostPort}: connect: no route to host`;
      break;
    case "ENOTFOUND":
    case "EAI_AGAIN":
      why = `dial tcp: lookup ${u.hostname}: no such host`;
      break;
    case "ECONNRESET":
    case "UND_ERR_SOCKET":
      why = "read: connection reset by peer";
      break;
    case "UND_ERR_CONNECT_TIMEOUT":
      why = `dial tcp ${hostPort}: i/o timeout`;
      break;
    case "UNABLE_TO_VERIFY_LEAF_SIGNATURE":
    case "SELF_SIGNED_CERT_IN_CHAIN":
    case "DEPTH_ZERO_SELF_SIGNED_CERT":
      why = "tls: failed to verify certificate: x509: certificate signed by unknown authority";
      break;
    case "ERR_TLS_CERT_ALTNAME_INVALID":
      why = `tls: failed to verify certificate: x509: certificate is valid for other names, not ${u.hostname}`;
      break;
    default:
      why = cause.message || String(e);
  }
  return new KubeConnectionError(`${verb} ${JSON.stringify(url)}: ${why}`);
}

/** `Get`, `Patch`: how Go's net/http names a method in its errors. */
function goVerb(method: string): string {
  return method.charAt(0) + method.slice(1).toLowerCase();
}

function keyOf(obj: KubeObject): ObjectKey {
  if (!obj.apiVersion || !obj.kind) throw new KubeApiError(400, "BadRequest", `object ${JSON.stringify(obj.metadata?.name ?? "")} has no apiVersion or kind`);
  return { apiVersion: obj.apiVersion, kind: obj.kind, name: obj.metadata?.name ?? "", namespace: obj.metadata?.namespace };
}
