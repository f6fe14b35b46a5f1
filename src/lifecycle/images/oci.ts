/**
 * OCI image plumbing shared by every pull path: descriptors, manifest/index selection for our architecture,
 * and an OCI image layout folder used both as a source (`oci:` refs) and as the cache of registry pulls.
 * Every blob read is checked against its sha256 digest, so a corrupted cache or a lying registry is caught.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { hostFiles, isNotFound, writeFileAtomic, type AtomicData, type Files } from "../../host/files/index.js";

export const MediaType = {
  ociIndex: "application/vnd.oci.image.index.v1+json",
  ociManifest: "application/vnd.oci.image.manifest.v1+json",
  dockerList: "application/vnd.docker.distribution.manifest.list.v2+json",
  dockerManifest: "application/vnd.docker.distribution.manifest.v2+json",
} as const;

export const MANIFEST_ACCEPT = Object.values(MediaType).join(", ");

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: { os?: string; architecture?: string; variant?: string };
  annotations?: Record<string, string>;
}

export interface ImageManifest {
  mediaType?: string;
  config: Descriptor;
  layers: Descriptor[];
}

interface ImageIndex {
  mediaType?: string;
  manifests: Descriptor[];
}

/** Where blobs come from: a layout folder, a registry (through our cache) or containerd's content store. */
export interface BlobSource {
  readonly where: string;
  /** A small blob (manifest, config), digest-checked. */
  blob(digest: string): Promise<Buffer>;
  /** A large blob as a stream; the consumer checks the digest with `verifyingStream`. */
  stream(digest: string): Promise<AsyncIterable<Buffer>>;
}

export function sha256Digest(data: Uint8Array): string {
  return `sha256:${createHash("sha256").update(data).digest("hex")}`;
}

export function checkDigest(digest: string, data: Uint8Array, where: string): Buffer {
  const got = sha256Digest(data);
  if (got !== digest) throw new Error(`${where}: blob ${digest} has digest ${got} (corrupted or tampered)`);
  return Buffer.from(data);
}

/** Passes chunks through and fails at the end when the bytes do not hash to `digest`. */
export async function* verifyingStream(src: AsyncIterable<Buffer>, digest: string, where: string): AsyncGenerator<Buffer> {
  const h = createHash("sha256");
  for await (const chunk of src) {
    h.update(chunk);
    yield chunk;
  }
  const got = `sha256:${h.digest("hex")}`;
  if (got !== digest) throw new Error(`${where}: blob ${digest} has digest ${got} (corrupted or tampered)`);
}

const isIndex = (mt: string | undefined, doc: { manifests?: unknown }) => mt === MediaType.ociIndex || mt === MediaType.dockerList || (!mt && Array.isArray(doc.manifests));

/** From the top-level document (index or manifest) to the image manifest for linux/<arch>. */
export async function selectManifest(source: BlobSource, top: Buffer, arch: string): Promise<{ manifest: ImageManifest; digest: string }> {
  const doc = JSON.parse(top.toString("utf8")) as ImageManifest & ImageIndex;
  if (!isIndex(doc.mediaType, doc)) return { manifest: doc, digest: sha256Digest(top) };
  const manifests = doc.manifests ?? [];
  const match = manifests.find((m) => m.platform?.architecture === arch && (m.platform.os ?? "linux") === "linux") ?? (manifests.length === 1 && !manifests[0].platform ? manifests[0] : undefined);
  if (!match) {
    const have = manifests.map((m) => `${m.platform?.os ?? "?"}/${m.platform?.architecture ?? "?"}`).join(", ") || "none";
    throw new Error(`${source.where}: no image for linux/${arch} (the index has: ${have})`);
  }
  const inner = await source.blob(match.digest);
  const nested = JSON.parse(inner.toString("utf8")) as ImageManifest & ImageIndex;
  if (isIndex(nested.mediaType, nested)) return selectManifest(source, inner, arch);
  return { manifest: nested, digest: match.digest };
}

const blobPath = (dir: string, digest: string) => join(dir, "blobs", ...digest.split(":"));

/** An OCI image layout folder (read side). */
export class OciLayout implements BlobSource {
  readonly where: string;
  constructor(
    readonly dir: string,
    private readonly files: Files = hostFiles,
  ) {
    this.where = `OCI layout ${dir}`;
  }

  async blob(digest: string): Promise<Buffer> {
    return checkDigest(digest, await this.files.readFile(blobPath(this.dir, digest)), this.where);
  }

  async stream(digest: string): Promise<AsyncIterable<Buffer>> {
    await this.files.stat(blobPath(this.dir, digest));
    return this.files.readStream(blobPath(this.dir, digest), { chunkSize: 1 << 20 });
  }

  async has(d: Descriptor): Promise<boolean> {
    return this.files.stat(blobPath(this.dir, d.digest)).then(
      (s) => s.size === d.size,
      () => false,
    );
  }

  async index(): Promise<Descriptor[]> {
    try {
      return (JSON.parse(await this.files.readFile(join(this.dir, "index.json"), "utf8")) as ImageIndex).manifests ?? [];
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
  }

  /** The top-level descriptor for a tag: annotation org.opencontainers.image.ref.name, or the only one. */
  async resolve(tag: string | undefined): Promise<Descriptor> {
    const all = await this.index();
    const named = (d: Descriptor) => d.annotations?.["org.opencontainers.image.ref.name"];
    const hit = tag ? all.find((d) => named(d) === tag) : all.length === 1 ? all[0] : undefined;
    if (!hit) {
      const names = all.map((d) => named(d) ?? d.digest).join(", ") || "none";
      // status 404: answered as NotFound, like a registry's unknown tag
      throw Object.assign(new Error(`${this.where}: ${tag ? `no image tagged ${JSON.stringify(tag)}` : "several images and no tag given"} (has: ${names})`), { status: 404 });
    }
    return hit;
  }

  // ---- write side (the registry pull cache) ----

  async init(): Promise<void> {
    await this.files.mkdir(join(this.dir, "blobs", "sha256"), { recursive: true });
    await this.files.writeFile(join(this.dir, "oci-layout"), '{"imageLayoutVersion":"1.0.0"}');
  }

  /**
   * Stores a blob from bytes or a stream, atomically: a stream that throws (a dropped connection, a digest
   * the caller's check rejects at its end) leaves no blob behind, so `has` never sees a partial one.
   */
  async writeBlob(digest: string, data: AtomicData): Promise<void> {
    await writeFileAtomic(this.files, blobPath(this.dir, digest), data, 0o644);
  }

  async putBlob(digest: string, data: Buffer): Promise<void> {
    checkDigest(digest, data, this.where);
    await this.writeBlob(digest, data);
  }

  /** Records `name` → top-level descriptor, replacing an older entry of that name. */
  async tag(name: string, d: Descriptor): Promise<void> {
    const key = "org.opencontainers.image.ref.name";
    const kept = (await this.index()).filter((x) => x.annotations?.[key] !== name);
    const entry = { mediaType: d.mediaType, digest: d.digest, size: d.size, annotations: { [key]: name } };
    const doc = { schemaVersion: 2, manifests: [...kept, entry] };
    await writeFileAtomic(this.files, join(this.dir, "index.json"), JSON.stringify(doc, null, 1), 0o644);
  }
}
