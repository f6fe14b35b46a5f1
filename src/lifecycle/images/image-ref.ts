/**
 * Installer image references. Three kinds:
 *   - registry images, as docker/containerd name them: [host[:port]/]path[:tag][@sha256:…]
 *     (no host → docker.io, one path component → library/…);
 *   - `oci:<dir>[:tag]`: an OCI image layout folder (what umoci and `skopeo copy … oci:` write);
 *   - `oci-archive:<file>[:tag]`: the same folder as a tar file (what `make image` writes).
 * The two local kinds let local mode and tests upgrade without a registry.
 */
import { invalidArgument } from "../../machinery/errors.js";

export interface RegistryRef {
  kind: "registry";
  /** Host as written (docker.io for the default). */
  registry: string;
  repository: string;
  tag?: string;
  digest?: string;
  /** Fully qualified name, e.g. docker.io/library/alpine:3 or 127.0.0.1:5000/x/installer@sha256:… */
  full: string;
}

export interface LayoutRef {
  kind: "oci" | "oci-archive";
  path: string;
  tag?: string;
  full: string;
}

export type ImageRef = RegistryRef | LayoutRef;

const DIGEST_RE = /^sha256:[0-9a-f]{64}$/;
const TAG_RE = /^[\w][\w.-]{0,127}$/;
const PATH_RE = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/;

function layoutRef(kind: "oci" | "oci-archive", rest: string, text: string): LayoutRef {
  // a trailing ":tag" is a tag only when it holds no slash (paths may contain colons)
  const i = rest.lastIndexOf(":");
  const tagged = i > 0 && !rest.slice(i + 1).includes("/");
  const path = tagged ? rest.slice(0, i) : rest;
  if (!path.startsWith("/")) throw invalidArgument(`image reference ${JSON.stringify(text)}: ${kind}: needs an absolute path`);
  return { kind, path, tag: tagged ? rest.slice(i + 1) : undefined, full: text };
}

export function parseImageRef(text: string): ImageRef {
  const t = text.trim();
  if (t === "") throw invalidArgument("installer image name is required");
  if (t.startsWith("oci:")) return layoutRef("oci", t.slice(4), t);
  if (t.startsWith("oci-archive:")) return layoutRef("oci-archive", t.slice(12), t);

  let rest = t;
  let digest: string | undefined;
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST_RE.test(digest)) throw invalidArgument(`image reference ${JSON.stringify(text)}: digest must be sha256:<64 hex digits>`);
  }
  let tag: string | undefined;
  const slash = rest.lastIndexOf("/");
  const colon = rest.lastIndexOf(":");
  if (colon > slash) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG_RE.test(tag)) throw invalidArgument(`image reference ${JSON.stringify(text)}: invalid tag ${JSON.stringify(tag)}`);
  }
  const parts = rest.split("/");
  let registry = "docker.io";
  if (parts.length > 1 && (parts[0].includes(".") || parts[0].includes(":") || parts[0] === "localhost")) {
    registry = parts.shift()!;
  }
  if (registry === "docker.io" && parts.length === 1) parts.unshift("library");
  const repository = parts.join("/");
  if (!PATH_RE.test(repository)) throw invalidArgument(`image reference ${JSON.stringify(text)}: invalid repository name ${JSON.stringify(repository)}`);
  if (!tag && !digest) tag = "latest";
  const full = `${registry}/${repository}${tag ? `:${tag}` : ""}${digest ? `@${digest}` : ""}`;
  return { kind: "registry", registry, repository, tag, digest, full };
}

/** The pinned name Talos answers a Pull with: repository@digest. */
export function pinnedName(ref: ImageRef, digest: string): string {
  if (ref.kind !== "registry") return `${ref.kind}:${ref.path}@${digest}`;
  return `${ref.registry}/${ref.repository}@${digest}`;
}

/** Loopback registries (tests, local mirrors) speak plain HTTP, as containerd assumes for them. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\./.test(h);
}
