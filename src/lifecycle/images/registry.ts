/**
 * A read-only client for the OCI distribution API (/v2/), used when containerd is not running: manifests and
 * blobs over HTTP(S). It tries the endpoints registry-hosts.ts resolved (mirrors first, then the registry
 * itself) and sticks to the first one that answers; a registry that asks for credentials gets Basic auth, or a
 * bearer token fetched with them (anonymous tokens for public registries such as ghcr.io and docker.io).
 * TLS settings (custom CA, insecureSkipVerify) are applied on the containerd path only; see docs/upgrade.md.
 */
import { basicCredentials } from "../../machinery/config/registries.js";
import { MANIFEST_ACCEPT, sha256Digest } from "./oci.js";
import type { RegistryRef } from "./image-ref.js";
import type { ResolvedEndpoint } from "./registry-hosts.js";

export interface RegistryOptions {
  /** Where to try, in order (registry-hosts.ts endpointsFor). */
  endpoints: ResolvedEndpoint[];
  fetch?: typeof fetch;
  signal?: AbortSignal;
}

type HttpError = Error & { status?: number };

export class RegistryClient {
  readonly where: string;
  private readonly doFetch: typeof fetch;
  /** The endpoint that answered first; later requests go there only. */
  private chosen: ResolvedEndpoint | undefined;
  private readonly authHeader = new Map<ResolvedEndpoint, string>();

  constructor(
    private readonly ref: RegistryRef,
    private readonly opts: RegistryOptions,
  ) {
    this.where = `registry ${ref.registry} (${ref.repository})`;
    this.doFetch = opts.fetch ?? fetch;
  }

  private async getFrom(ep: ResolvedEndpoint, path: string, accept?: string): Promise<Response> {
    const attempt = () => {
      const auth = this.authHeader.get(ep);
      return this.doFetch(`${ep.base}${path}`, {
        headers: { ...(accept ? { accept } : {}), ...(auth ? { authorization: auth } : {}) },
        signal: this.opts.signal,
        redirect: "follow",
      });
    };
    let res: Response;
    try {
      res = await attempt();
    } catch (err) {
      throw new Error(`cannot reach ${ep.base}: ${(err as Error).cause ?? (err as Error).message}`);
    }
    if (res.status === 401 && !this.authHeader.has(ep)) {
      const challenge = res.headers.get("www-authenticate") ?? "";
      await res.body?.cancel();
      this.authHeader.set(ep, await this.authorize(ep, challenge));
      res = await attempt();
    }
    if (!res.ok) {
      const body = (await res.text().catch(() => "")).slice(0, 300).trim();
      const what = res.status === 404 ? "not found" : res.status === 401 ? "unauthorized (check machine.registries credentials)" : `HTTP ${res.status}`;
      throw Object.assign(new Error(`GET ${ep.base}${path}: ${what}${body ? `: ${body}` : ""}`), { status: res.status });
    }
    return res;
  }

  /** GET from the chosen endpoint, or from each in turn until one answers; the error names every attempt. */
  private async get(path: string, accept?: string): Promise<Response> {
    if (this.chosen) {
      try {
        return await this.getFrom(this.chosen, path, accept);
      } catch (err) {
        throw Object.assign(new Error(`${this.where}: ${(err as Error).message}`), { status: (err as HttpError).status });
      }
    }
    const errors: HttpError[] = [];
    for (const ep of this.opts.endpoints) {
      try {
        const res = await this.getFrom(ep, path, accept);
        this.chosen = ep;
        return res;
      } catch (err) {
        errors.push(err as HttpError);
      }
    }
    const detail = errors.map((e) => e.message).join("; ");
    // the status of the last attempt (the registry itself when fallback is on) tells callers "not found" apart
    throw Object.assign(new Error(`${this.where}: ${detail}`), { status: errors[errors.length - 1]?.status });
  }

  /** The Authorization header for a 401 challenge: Basic with the configured credentials, or a bearer token. */
  private async authorize(ep: ResolvedEndpoint, challenge: string): Promise<string> {
    const creds = basicCredentials(ep.auth);
    const basic = creds ? `Basic ${Buffer.from(`${creds.username}:${creds.password}`).toString("base64")}` : undefined;
    if (/^Basic\b/i.test(challenge)) {
      if (!basic) throw Object.assign(new Error(`${ep.host} requires credentials and machine.registries has none for it`), { status: 401 });
      return basic;
    }
    const m = /^Bearer\s+(.*)$/i.exec(challenge);
    if (!m) throw new Error(`${ep.host}: authentication required with an unsupported scheme (${challenge || "no challenge"})`);
    const params: Record<string, string> = {};
    for (const p of m[1].matchAll(/(\w+)="([^"]*)"/g)) params[p[1]] = p[2];
    if (!params.realm) throw new Error(`${ep.host}: bearer challenge without a realm`);
    const url = new URL(params.realm);
    if (params.service) url.searchParams.set("service", params.service);
    url.searchParams.set("scope", params.scope ?? `repository:${this.ref.repository}:pull`);
    const res = await this.doFetch(url, { signal: this.opts.signal, headers: basic ? { authorization: basic } : {} });
    if (!res.ok) throw Object.assign(new Error(`${ep.host}: token request to ${url.origin} failed with HTTP ${res.status}`), { status: res.status });
    const body = (await res.json()) as { token?: string; access_token?: string };
    const token = body.token ?? body.access_token;
    if (!token) throw new Error(`${ep.host}: token response carries no token`);
    return `Bearer ${token}`;
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
