/**
 * A read-only client for the OCI distribution API (/v2/), used when containerd is not running: manifests and
 * blobs over HTTP(S), with the anonymous bearer-token handshake public registries (ghcr.io, docker.io) require.
 * Loopback and configured insecure hosts are spoken to over plain HTTP.
 */
import { MANIFEST_ACCEPT, sha256Digest } from "./oci.js";
import type { RegistryRef } from "./image-ref.js";

export interface RegistryOptions {
  /** Hosts reached over plain HTTP. */
  plainHttp: (host: string) => boolean;
  fetch?: typeof fetch;
  signal?: AbortSignal;
}

/** docker.io's API lives on another host. */
const apiHost = (registry: string) => (registry === "docker.io" ? "registry-1.docker.io" : registry);

export class RegistryClient {
  readonly where: string;
  private readonly base: string;
  private token: string | undefined;
  private readonly doFetch: typeof fetch;

  constructor(
    private readonly ref: RegistryRef,
    private readonly opts: RegistryOptions,
  ) {
    const host = apiHost(ref.registry);
    this.base = `${opts.plainHttp(ref.registry) ? "http" : "https"}://${host}/v2/${ref.repository}`;
    this.where = `registry ${ref.registry} (${ref.repository})`;
    this.doFetch = opts.fetch ?? fetch;
  }

  /** GET with one retry after fetching an anonymous token when the registry asks for one. */
  private async get(path: string, accept?: string): Promise<Response> {
    const attempt = () =>
      this.doFetch(`${this.base}${path}`, {
        headers: { ...(accept ? { accept } : {}), ...(this.token ? { authorization: `Bearer ${this.token}` } : {}) },
        signal: this.opts.signal,
        redirect: "follow",
      });
    let res: Response;
    try {
      res = await attempt();
    } catch (err) {
      throw new Error(`${this.where}: cannot reach ${this.base}: ${(err as Error).cause ?? (err as Error).message}`);
    }
    if (res.status === 401 && !this.token) {
      const challenge = res.headers.get("www-authenticate") ?? "";
      await res.body?.cancel();
      this.token = await this.anonymousToken(challenge);
      res = await attempt();
    }
    if (!res.ok) {
      const body = (await res.text().catch(() => "")).slice(0, 300).trim();
      const what = res.status === 404 ? "not found" : `HTTP ${res.status}`;
      throw Object.assign(new Error(`${this.where}: GET ${path}: ${what}${body ? `: ${body}` : ""}`), { status: res.status });
    }
    return res;
  }

  private async anonymousToken(challenge: string): Promise<string> {
    const m = /^Bearer\s+(.*)$/i.exec(challenge);
    if (!m) throw new Error(`${this.where}: authentication required (${challenge || "no challenge"}); only anonymous pulls are supported`);
    const params: Record<string, string> = {};
    for (const p of m[1].matchAll(/(\w+)="([^"]*)"/g)) params[p[1]] = p[2];
    if (!params.realm) throw new Error(`${this.where}: bearer challenge without a realm`);
    const url = new URL(params.realm);
    if (params.service) url.searchParams.set("service", params.service);
    url.searchParams.set("scope", params.scope ?? `repository:${this.ref.repository}:pull`);
    const res = await this.doFetch(url, { signal: this.opts.signal });
    if (!res.ok) throw new Error(`${this.where}: token request to ${url.origin} failed with HTTP ${res.status}`);
    const body = (await res.json()) as { token?: string; access_token?: string };
    const token = body.token ?? body.access_token;
    if (!token) throw new Error(`${this.where}: token response carries no token`);
    return token;
  }

  /** The manifest (or index) for a tag or digest, with its digest and media type. */
  async manifest(reference: string): Promise<{ data: Buffer; digest: string; mediaType: string }> {
    const res = await this.get(`/manifests/${reference}`, MANIFEST_ACCEPT);
    const data = Buffer.from(await res.arrayBuffer());
    const digest = sha256Digest(data);
    if (reference.startsWith("sha256:") && digest !== reference) throw new Error(`${this.where}: manifest ${reference} has digest ${digest}`);
    const mediaType = (res.headers.get("content-type") ?? "").split(";")[0].trim() || (JSON.parse(data.toString()) as { mediaType?: string }).mediaType || "";
    return { data, digest, mediaType };
  }

  /** A blob as a byte stream (the caller verifies the digest while storing it). */
  async blobStream(digest: string): Promise<{ body: AsyncIterable<Uint8Array>; length?: number }> {
    const res = await this.get(`/blobs/${digest}`);
    if (!res.body) throw new Error(`${this.where}: empty body for blob ${digest}`);
    const len = Number(res.headers.get("content-length"));
    return { body: res.body as unknown as AsyncIterable<Uint8Array>, length: Number.isFinite(len) ? len : undefined };
  }
}
