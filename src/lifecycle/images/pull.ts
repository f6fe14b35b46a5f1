/**
 * Pulls an installer image and answers which blobs make it up. Paths, in order of preference:
 *   1. `oci:` / `oci-archive:` references: read from disk (local mode, tests);
 *   2. containerd is running: `ctr images pull` into the requested namespace (the Talos way);
 *   3. otherwise straight from the registry over HTTP into our own OCI layout cache (`<stateDir>/images`),
 *      e.g. a local node without containerd, or maintenance mode before containerd starts.
 * Progress is reported per layer, in the shape of ImageServicePullProgress.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { hostFiles, type Files } from "../../host/files/index.js";
import type { Ctr } from "../../supervisor/index.js";
import { ContainerdContent } from "./containerd.js";
import { isLoopbackHost, parseImageRef, pinnedName, type ImageRef, type RegistryRef } from "./image-ref.js";
import { OciLayout, selectManifest, sha256Digest, type BlobSource, type Descriptor, type ImageManifest } from "./oci.js";
import { basicCredentials, type Registries } from "../../machinery/config/registries.js";
import { RegistryClient } from "./registry.js";
import { credentialsFor, EMPTY_REGISTRIES, endpointsFor, writeHostsDir } from "./registry-hosts.js";
import { extractTar } from "./tar-read.js";

export type PullStatus = "downloading" | "download-complete" | "already-exists";

export interface PullProgress {
  layerId: string;
  status: PullStatus;
  offset: number;
  total: number;
  elapsedMs: number;
}

export type PullVia = "oci-layout" | "containerd" | "registry";

export interface PulledImage {
  ref: ImageRef;
  /** repository@digest, as Talos answers ImageService/Pull. */
  name: string;
  digest: string;
  manifest: ImageManifest;
  source: BlobSource;
  via: PullVia;
}

export interface PullerOptions {
  /** Cache folder for registry pulls and unpacked oci-archive files. */
  cacheDir: string;
  arch: string;
  /** containerd access; undefined (or returning undefined) → pull over HTTP ourselves. */
  ctr?: () => Ctr | undefined;
  /** Registries spoken to over plain HTTP besides loopback ones. */
  insecureRegistries?: string[];
  fetch?: typeof fetch;
  /** Where the cache lives (the host's filesystem by default). */
  files?: Files;
}

export interface PullRequest {
  ref: string;
  /** containerd namespace (system or k8s.io); only used on the containerd path. */
  namespace?: string;
  /**
   * The containerd to pull into instead of the puller's own (the CRI one, for images the kubelet runs). A pull for
   * a given containerd never falls back to our cache: that image would be where nothing runs it.
   */
  into?: Ctr;
  /** Mirrors, credentials and TLS settings from the machine config (machine.registries and the Registry* documents). */
  registries?: Registries;
  onProgress?: (p: PullProgress) => void;
  signal?: AbortSignal;
}

const shortId = (digest: string) => digest.replace(/^sha256:/, "").slice(0, 12);

export class ImagePuller {
  private readonly files: Files;

  constructor(private readonly o: PullerOptions) {
    this.files = o.files ?? hostFiles;
  }

  private plainHttp = (host: string) => isLoopbackHost(host) || (this.o.insecureRegistries ?? []).includes(host);

  /** The path a pull of `ref` would take right now (for messages and tests). */
  via(ref: ImageRef): PullVia {
    if (ref.kind !== "registry") return "oci-layout";
    return this.o.ctr?.() ? "containerd" : "registry";
  }

  async pull(req: PullRequest): Promise<PulledImage> {
    const ref = parseImageRef(req.ref);
    const started = Date.now();
    const report = (d: Descriptor, status: PullStatus, offset = status === "downloading" ? 0 : d.size) =>
      req.onProgress?.({ layerId: shortId(d.digest), status, offset, total: d.size, elapsedMs: Date.now() - started });

    if (ref.kind !== "registry") {
      const layout = ref.kind === "oci" ? new OciLayout(ref.path, this.files) : await this.unpackArchive(ref.path);
      const top = await layout.resolve(ref.tag);
      const { manifest } = await selectManifest(layout, await layout.blob(top.digest), this.o.arch);
      for (const l of manifest.layers) report(l, "already-exists");
      return { ref, name: pinnedName(ref, top.digest), digest: top.digest, manifest, source: layout, via: "oci-layout" };
    }

    const ctr = req.into ?? this.o.ctr?.();
    if (ctr) {
      const content = new ContainerdContent(ctr, req.namespace ?? "system");
      const before = await content.imageDigest(ref.full).catch(() => undefined);
      const registries = req.registries ?? EMPTY_REGISTRIES;
      const hostsDir = await writeHostsDir(join(this.o.cacheDir, "registries", "hosts"), registries, this.files);
      const user = basicCredentials(credentialsFor(endpointsFor(ref, registries, this.plainHttp)));
      const { digest } = await content.pull(ref, { plainHttp: this.plainHttp(ref.registry), arch: this.o.arch, signal: req.signal, hostsDir, user });
      const { manifest } = await selectManifest(content, await content.blob(digest), this.o.arch);
      // ctr's own progress output is made for terminals; report per layer once the pull is done
      for (const l of manifest.layers) report(l, before?.digest === digest ? "already-exists" : "download-complete");
      return { ref, name: pinnedName(ref, digest), digest, manifest, source: content, via: "containerd" };
    }
    return this.pullHttp(ref, req, report);
  }

  private async pullHttp(ref: RegistryRef, req: PullRequest, report: (d: Descriptor, s: PullStatus, offset?: number) => void): Promise<PulledImage> {
    const cache = new OciLayout(join(this.o.cacheDir, "images"), this.files);
    await cache.init();
    const endpoints = endpointsFor(ref, req.registries ?? EMPTY_REGISTRIES, this.plainHttp);
    const client = new RegistryClient(ref, { endpoints, fetch: this.o.fetch, signal: req.signal });
    const top = await client.manifest(ref.digest ?? ref.tag ?? "latest");
    await cache.putBlob(top.digest, top.data);
    // index → per-arch manifest: fetched through a source that fills the cache as it goes
    const filling: BlobSource = {
      where: client.where,
      blob: async (digest) => {
        const m = await client.manifest(digest);
        await cache.putBlob(digest, m.data);
        return m.data;
      },
      stream: () => Promise.reject(new Error("not used")),
    };
    const { manifest } = await selectManifest(filling, top.data, this.o.arch);
    for (const d of [manifest.config, ...manifest.layers]) {
      if (await cache.has(d)) {
        if (d !== manifest.config) report(d, "already-exists");
        continue;
      }
      await this.download(client, cache, d, d === manifest.config ? undefined : report);
    }
    await cache.tag(ref.full, { mediaType: top.mediaType, digest: top.digest, size: top.data.length });
    return { ref, name: pinnedName(ref, top.digest), digest: top.digest, manifest, source: cache, via: "registry" };
  }

  private async download(client: RegistryClient, cache: OciLayout, d: Descriptor, report?: (d: Descriptor, s: PullStatus, offset?: number) => void): Promise<void> {
    const { body } = await client.blobStream(d.digest);
    report?.(d, "downloading", 0);
    // counted and hashed on the way to the cache; a mismatch at the end keeps the blob out of it
    const checked = (async function* () {
      const h = createHash("sha256");
      let offset = 0;
      let lastReport = 0;
      for await (const chunk of body) {
        h.update(chunk);
        offset += chunk.length;
        yield chunk;
        if (report && Date.now() - lastReport > 500) {
          lastReport = Date.now();
          report(d, "downloading", offset);
        }
      }
      const got = `sha256:${h.digest("hex")}`;
      if (got !== d.digest || offset !== d.size) {
        throw new Error(`${client.where}: blob ${d.digest} arrived as ${offset} bytes with digest ${got} (expected ${d.size} bytes)`);
      }
    })();
    await cache.writeBlob(d.digest, checked);
    report?.(d, "download-complete");
  }

  /** An oci-archive file is unpacked once per content (keyed by its hash) into the cache. */
  private async unpackArchive(path: string): Promise<OciLayout> {
    const st = await this.files.stat(path).catch(() => undefined);
    if (!st?.isFile()) throw new Error(`oci-archive ${path} does not exist or is not a file`);
    const key = sha256Digest(Buffer.from(`${path}\0${st.size}\0${st.mtimeMs}`)).slice(7, 23);
    const dir = join(this.o.cacheDir, "archives", key);
    const layout = new OciLayout(dir, this.files);
    if ((await layout.index()).length > 0) return layout;
    // unpacked next to the final folder and renamed, so a cut unpack is never mistaken for a complete one
    const tmp = `${dir}.tmp`;
    await this.files.rm(tmp, { recursive: true, force: true });
    await this.files.mkdir(tmp, { recursive: true });
    await extractTar(this.files.readStream(path, { chunkSize: 1 << 20 }), (name) => join(tmp, name), this.files);
    if ((await new OciLayout(tmp, this.files).index()).length === 0) throw new Error(`oci-archive ${path} holds no index.json (not an OCI image layout archive)`);
    await this.files.rm(dir, { recursive: true, force: true });
    await this.files.rename(tmp, dir);
    return layout;
  }
}
