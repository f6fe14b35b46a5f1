/**
 * Image registry settings from a machine config, merged from both places upstream Talos reads them:
 * v1alpha1 `machine.registries` (mirrors, config.{auth,tls}) and the RegistryMirrorConfig / RegistryAuthConfig /
 * RegistryTLSConfig documents (the documents win for the same name). Pure: what to do with them (try mirror
 * endpoints in order, then the registry itself unless skipFallback; credentials and TLS keyed by endpoint
 * host) lives with the code that pulls.
 */
import type { MachineConfig } from "./machineconfig.js";

export interface RegistryEndpoint {
  /** Base URL, e.g. "http://10.0.2.2:5000" or "https://harbor.example/v2/proxy" (with overridePath). */
  url: string;
  /** The URL already carries the API path: requests go to `${url}/<repo>/...` instead of `${url}/v2/<repo>/...`. */
  overridePath: boolean;
}

export interface RegistryMirror {
  endpoints: RegistryEndpoint[];
  /** Never fall back to the registry named in the image reference. */
  skipFallback: boolean;
}

export interface RegistryAuth {
  username?: string;
  password?: string;
  /** base64 of "username:password", as in a docker config.json. */
  auth?: string;
  identityToken?: string;
}

export interface RegistryTls {
  insecureSkipVerify?: boolean;
  /** PEM of the CA that signs the registry's certificate. */
  ca?: string;
}

export interface Registries {
  /** Keyed by registry host as written in image references ("docker.io", "10.0.2.2:5000"), or "*" for all. */
  mirrors: Record<string, RegistryMirror>;
  /** Keyed by the host:port of an endpoint (a mirror's or the registry's own). */
  auth: Record<string, RegistryAuth>;
  tls: Record<string, RegistryTls>;
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const compact = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

export function registriesOf(cfg: MachineConfig | undefined): Registries {
  const out: Registries = { mirrors: {}, auth: {}, tls: {} };
  if (!cfg) return out;
  const legacy = cfg.machine?.registries;
  for (const [host, m] of Object.entries(legacy?.mirrors ?? {})) {
    out.mirrors[host] = { endpoints: (m.endpoints ?? []).map((url) => ({ url, overridePath: m.overridePath ?? false })), skipFallback: m.skipFallback ?? false };
  }
  for (const [host, c] of Object.entries(legacy?.config ?? {})) {
    if (c.auth) out.auth[host] = compact({ username: str(c.auth.username), password: str(c.auth.password), auth: str(c.auth.auth), identityToken: str(c.auth.identityToken) });
    if (c.tls) {
      // v1alpha1 carries the CA base64-encoded
      const ca = str(c.tls.ca) ? Buffer.from(c.tls.ca!, "base64").toString("utf8") : undefined;
      out.tls[host] = compact({ insecureSkipVerify: c.tls.insecureSkipVerify, ca });
    }
  }
  for (const d of cfg.documentsOfKind("RegistryMirrorConfig")) {
    const eps = Array.isArray(d.data.endpoints) ? (d.data.endpoints as Record<string, unknown>[]) : [];
    out.mirrors[d.name ?? ""] = {
      endpoints: eps.filter((e) => str(e.url)).map((e) => ({ url: e.url as string, overridePath: e.overridePath === true })),
      skipFallback: d.data.skipFallback === true,
    };
  }
  for (const d of cfg.documentsOfKind("RegistryAuthConfig")) {
    out.auth[d.name ?? ""] = compact({ username: str(d.data.username), password: str(d.data.password), auth: str(d.data.auth), identityToken: str(d.data.identityToken) });
  }
  for (const d of cfg.documentsOfKind("RegistryTLSConfig")) {
    out.tls[d.name ?? ""] = compact({ insecureSkipVerify: d.data.insecureSkipVerify === true ? true : undefined, ca: str(d.data.ca) });
  }
  return out;
}

/** username/password from whichever form the credentials take, or undefined for an identity token only. */
export function basicCredentials(a: RegistryAuth | undefined): { username: string; password: string } | undefined {
  if (!a) return undefined;
  if (a.username !== undefined || a.password !== undefined) return { username: a.username ?? "", password: a.password ?? "" };
  if (a.auth) {
    const text = Buffer.from(a.auth, "base64").toString("utf8");
    const i = text.indexOf(":");
    if (i > 0) return { username: text.slice(0, i), password: text.slice(i + 1) };
  }
  return undefined;
}

/** docker.io's API lives on another host. */
export const apiHost = (registry: string) => (registry === "docker.io" ? "registry-1.docker.io" : registry);

const toml = (s: string) => JSON.stringify(s); // a TOML basic string escapes like JSON for our inputs

/**
 * containerd's hosts folder for the mirrors: `<dir>/<host>/hosts.toml` per mirrored registry (the "*" mirror
 * becomes `_default`), plus the CA files they name. Empty when nothing is mirrored.
 */
export function hostsDirFiles(dir: string, r: Registries): Array<{ path: string; content: string }> {
  const out: Array<{ path: string; content: string }> = [];
  for (const host of Object.keys(r.mirrors)) {
    const m = r.mirrors[host];
    const folder = `${dir}/${host === "*" ? "_default" : host}`;
    const lines: string[] = [];
    // `server` is where containerd falls back to; with skipFallback the last mirror stands in for it
    if (host !== "*") lines.push(`server = ${toml(m.skipFallback && m.endpoints.length > 0 ? m.endpoints[m.endpoints.length - 1].url : `https://${apiHost(host)}`)}`, "");
    for (const [i, ep] of m.endpoints.entries()) {
      const epHost = new URL(ep.url).host;
      lines.push(`[host.${toml(ep.url)}]`, `  capabilities = ["pull", "resolve"]`);
      if (ep.overridePath) lines.push("  override_path = true");
      const tls = r.tls[epHost];
      if (tls?.insecureSkipVerify) lines.push("  skip_verify = true");
      if (tls?.ca) {
        const caFile = `${folder}/ca-${i}.pem`;
        out.push({ path: caFile, content: tls.ca });
        lines.push(`  ca = ${toml(caFile)}`);
      }
      lines.push("");
    }
    out.push({ path: `${folder}/hosts.toml`, content: lines.join("\n") });
  }
  return out;
}
