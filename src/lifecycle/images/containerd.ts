/**
 * Pulling the installer image through containerd (what the issue asks for, and what Talos does): `ctr images
 * pull` into the requested namespace, then blobs are read back from containerd's content store with
 * `ctr content get`, so the image stays visible to `talosctl image list` and is garbage-collected by containerd.
 */
import { ToolExitError } from "../../host/tools.js";
import type { Ctr } from "../../supervisor/index.js";
import type { RegistryRef } from "./image-ref.js";
import { checkDigest, type BlobSource } from "./oci.js";

const PULL_TIMEOUT_MS = 30 * 60_000;

export class ContainerdContent implements BlobSource {
  readonly where: string;
  constructor(
    private readonly ctr: Ctr,
    private readonly namespace: string,
  ) {
    this.where = `containerd (${ctr.address}, namespace ${namespace})`;
  }

  /** Top-level digest of an image already in the namespace, or undefined. */
  async imageDigest(name: string): Promise<{ digest: string; mediaType: string } | undefined> {
    const out = await this.ctr.exec(["images", "ls", `name==${name}`], this.namespace);
    const row = out
      .split("\n")
      .slice(1)
      .map((l) => l.trim().split(/\s+/))
      .find((cols) => cols[0] === name);
    return row ? { mediaType: row[1], digest: row[2] } : undefined;
  }

  async pull(
    ref: RegistryRef,
    opts: { plainHttp: boolean; arch: string; signal?: AbortSignal; hostsDir?: string; user?: { username: string; password: string } },
  ): Promise<{ digest: string; mediaType: string }> {
    const args = ["images", "pull", "--platform", `linux/${opts.arch}`];
    if (opts.plainHttp) args.push("--plain-http");
    // mirrors and TLS settings: <hostsDir>/<registry>/hosts.toml (registry-hosts.ts)
    if (opts.hostsDir) args.push("--hosts-dir", opts.hostsDir);
    if (opts.user) args.push("--user", `${opts.user.username}:${opts.user.password}`);
    await this.ctr.exec([...args, ref.full], this.namespace, { timeoutMs: PULL_TIMEOUT_MS, signal: opts.signal });
    const got = await this.imageDigest(ref.full);
    if (!got) throw new Error(`${this.where}: ${ref.full} is not listed after the pull`);
    return got;
  }

  async blob(digest: string): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const c of await this.stream(digest)) chunks.push(c);
    return checkDigest(digest, Buffer.concat(chunks), this.where);
  }

  /** `ctr content get` streams the blob to stdout; a non-zero exit becomes an error at the end of the stream. */
  async stream(digest: string): Promise<AsyncIterable<Buffer>> {
    const out = this.ctr.tools.stream([this.ctr.bin, "-a", this.ctr.address, "-n", this.namespace, "content", "get", digest]);
    const where = this.where;
    return (async function* () {
      try {
        yield* out;
      } catch (err) {
        if (err instanceof ToolExitError) throw new Error(`${where}: ctr content get ${digest} failed (exit ${err.exitCode}): ${err.stderr.trim()}`);
        throw err;
      }
    })();
  }
}
