/**
 * Where a pull of an image actually goes, from the config's registry settings (machinery/config/registries.ts):
 * the mirror endpoints for the image's registry (or the "*" mirror), in order, then the registry itself unless
 * the mirror says skipFallback. Credentials and TLS settings are looked up by each endpoint's host:port.
 * For containerd the same answer is written as a hosts directory (`ctr images pull --hosts-dir`), one
 * `<host>/hosts.toml` per mirrored registry, in containerd's documented format.
 */
import { dirname } from "node:path";
import { hostFiles, type Files } from "../../host/files/index.js";
import { hostsDirFiles, type Registries, type RegistryAuth, type RegistryTls } from "../../machinery/config/registries.js";
import type { RegistryRef } from "./image-ref.js";

export interface ResolvedEndpoint {
  /** URL up to the repository: requests append /manifests/… and /blobs/…. */
  base: string;
  /** host:port of the endpoint: the key for credentials and TLS settings. */
  host: string;
  mirror: boolean;
  auth?: RegistryAuth;
  tls?: RegistryTls;
}

/** docker.io's API lives on another host. */
export { apiHost } from "../../machinery/config/registries.js";
import { apiHost } from "../../machinery/config/registries.js";

export const EMPTY_REGISTRIES: Registries = { mirrors: {}, auth: {}, tls: {} };

function mirrorFor(registry: string, r: Registries) {
  return r.mirrors[registry] ?? r.mirrors["*"];
}

export function endpointsFor(ref: RegistryRef, r: Registries, plainHttp: (host: string) => boolean): ResolvedEndpoint[] {
  const out: ResolvedEndpoint[] = [];
  const mirror = mirrorFor(ref.registry, r);
  for (const ep of mirror?.endpoints ?? []) {
    let url: URL;
    try {
      url = new URL(ep.url);
    } catch {
      throw new Error(`registry mirror endpoint ${JSON.stringify(ep.url)} for ${ref.registry} is not a URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error(`registry mirror endpoint ${ep.url} for ${ref.registry} must be http:// or https://`);
    const prefix = `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
    out.push({ base: ep.overridePath ? `${prefix}/${ref.repository}` : `${prefix}/v2/${ref.repository}`, host: url.host, mirror: true, auth: r.auth[url.host], tls: r.tls[url.host] });
  }
  if (!mirror?.skipFallback) {
    const host = apiHost(ref.registry);
    out.push({ base: `${plainHttp(ref.registry) ? "http" : "https"}://${host}/v2/${ref.repository}`, host: ref.registry, mirror: false, auth: r.auth[ref.registry] ?? r.auth[host], tls: r.tls[ref.registry] ?? r.tls[host] });
  }
  if (out.length === 0) throw new Error(`registry ${ref.registry} has a mirror with skipFallback and no endpoints: nothing to pull from`);
  return out;
}

/**
 * Writes `<dir>/<host>/hosts.toml` for every mirrored registry (the "*" mirror becomes `_default`), replacing
 * what was there. Returns the folder to pass as --hosts-dir, or undefined when nothing is mirrored.
 */
export async function writeHostsDir(dir: string, r: Registries, files: Files = hostFiles): Promise<string | undefined> {
  await files.rm(dir, { recursive: true, force: true });
  const out = hostsDirFiles(dir, r);
  if (out.length === 0) return undefined;
  for (const f of out) {
    await files.mkdir(dirname(f.path), { recursive: true });
    await files.writeFile(f.path, f.content);
  }
  return dir;
}

/** Credentials for a pull through ctr (`--user`): the first endpoint that has some. */
export function credentialsFor(eps: ResolvedEndpoint[]): RegistryAuth | undefined {
  return eps.find((e) => e.auth)?.auth;
}
