/**
 * ImageService on a node without an install target (item 5 of issue 9): `talosctl image list/pull/remove` go to
 * the node's image service, which needs containerd, not an install manager. containerd's `ctr` is a FakeTools
 * stand-in holding an image store in memory (the real daemon is exercised in lifecycle/install/registry.test.ts),
 * and the cache is a MemoryFiles.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { imageHandlers } from "../../src/api/handlers/images.js";
import type { ApiDeps } from "../../src/api/deps.js";
import type { CallContext } from "../../src/api/transport/context.js";
import { ContainerDriver, ContainerdNamespace } from "../../src/machinery/api/gen/common/common_pb.js";
import { ImageServiceListRequestSchema, ImageServicePullRequestSchema, ImageServiceRemoveRequestSchema } from "../../src/machinery/api/gen/machine/image_pb.js";
import { Code } from "../../src/machinery/errors.js";
import { MemoryFiles } from "../../src/host/files/index.js";
import { FakeTools } from "../../src/host/tools.js";
import { ImageManager } from "../../src/lifecycle/images/manager.js";
import { MediaType, sha256Digest } from "../../src/lifecycle/images/oci.js";
import { Ctr } from "../../src/supervisor/ctr.js";

const ctx = { signal: new AbortController().signal } as CallContext;
const system = { driver: ContainerDriver.CONTAINERD, namespace: ContainerdNamespace.NS_SYSTEM };

/** One image (manifest + config + one layer) as containerd's content store would hold it. */
function image(created: string) {
  const config = Buffer.from(JSON.stringify({ created, architecture: "amd64", os: "linux" }));
  const layer = Buffer.from("layer bytes");
  const d = (b: Buffer, mediaType: string) => ({ mediaType, digest: sha256Digest(b), size: b.length });
  const manifest = Buffer.from(
    JSON.stringify({ schemaVersion: 2, mediaType: MediaType.ociManifest, config: d(config, "application/vnd.oci.image.config.v1+json"), layers: [d(layer, "application/vnd.oci.image.layer.v1.tar")] }),
  );
  const blobs = new Map([manifest, config, layer].map((b) => [sha256Digest(b), b]));
  return { digest: sha256Digest(manifest), blobs, size: manifest.length + config.length + layer.length };
}

/** A ctr that answers images ls/pull/rm and content get from an in-memory store, per namespace. */
function fakeContainerd() {
  const store = new Map<string, Map<string, string>>(); // ns → name → digest
  const blobs = new Map<string, Buffer>();
  const registry = new Map<string, ReturnType<typeof image>>([["registry.example/app:v1", image("2025-01-02T03:04:05Z")]]);
  const tools = new FakeTools().on("ctr", (args) => {
    const ns = args[args.indexOf("-n") + 1];
    const cmd = args.slice(args.indexOf("-n") + 2);
    const names = store.get(ns) ?? new Map<string, string>();
    store.set(ns, names);
    const row = (name: string) => `${name} ${MediaType.ociManifest} ${names.get(name)} 1.0 KiB linux/amd64 -`;
    if (cmd[0] === "images" && cmd[1] === "ls") {
      const only = cmd[2]?.replace(/^name==/, "");
      const rows = [...names.keys()].filter((n) => !only || n === only).map(row);
      return { stdout: ["REF TYPE DIGEST SIZE PLATFORMS LABELS", ...rows, ""].join("\n") };
    }
    if (cmd[0] === "images" && cmd[1] === "pull") {
      const ref = cmd[cmd.length - 1];
      const img = registry.get(ref);
      if (!img) return { code: 1, stderr: `ctr: failed to resolve reference "${ref}": not found` };
      for (const [k, v] of img.blobs) blobs.set(k, v);
      names.set(ref, img.digest);
      return {};
    }
    if (cmd[0] === "images" && cmd[1] === "rm") {
      names.delete(cmd[cmd.length - 1]);
      return {};
    }
    if (cmd[0] === "content" && cmd[1] === "get") {
      const b = blobs.get(cmd[2]);
      return b ? { stdout: b } : { code: 1, stderr: `ctr: content digest ${cmd[2]}: not found` };
    }
    return { code: 1, stderr: `fake ctr: unexpected ${cmd.join(" ")}` };
  });
  return { ctr: new Ctr("/run/containerd/containerd.sock", "ctr", tools), store, tools };
}

/** What a configured node without an install target hands the API: services, images, no install. */
function deps(images: ImageManager | undefined): ApiDeps {
  return { images } as unknown as ApiDeps;
}

async function list(d: ApiDeps) {
  const out: { name: string; digest: string; size: bigint; createdAt?: { seconds: bigint } }[] = [];
  await imageHandlers(d).List(create(ImageServiceListRequestSchema, { containerd: system }), async (m: (typeof out)[number]) => void out.push(m), ctx);
  return out;
}

describe("ImageService without an install target", () => {
  it("pulls through containerd, lists with size and creation date, and removes", async () => {
    const c = fakeContainerd();
    const images = new ImageManager({ cacheDir: "/state", arch: "amd64", ctr: () => c.ctr, files: new MemoryFiles() });
    const d = deps(images);
    const pulled: unknown[] = [];
    await imageHandlers(d).Pull(create(ImageServicePullRequestSchema, { containerd: system, imageRef: "registry.example/app:v1" }), async (m: unknown) => void pulled.push(m), ctx);
    const img = image("2025-01-02T03:04:05Z");
    expect(pulled.at(-1)).toEqual({ response: { case: "name", value: `registry.example/app@${img.digest}` } });
    expect(c.tools.calls.some((a) => a.includes("pull") && a.includes("--platform") && a.includes("linux/amd64"))).toBe(true);

    const got = await list(d);
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ name: "registry.example/app:v1", digest: img.digest, size: BigInt(img.size) });
    expect(got[0].createdAt?.seconds).toBe(BigInt(Date.parse("2025-01-02T03:04:05Z") / 1000));

    await imageHandlers(d).Remove(create(ImageServiceRemoveRequestSchema, { containerd: system, imageRef: "registry.example/app:v1" }), ctx);
    expect(await list(d)).toEqual([]);
    await expect(imageHandlers(d).Remove(create(ImageServiceRemoveRequestSchema, { containerd: system, imageRef: "registry.example/app:v1" }), ctx)).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });

  it("a pull of an unknown image is NotFound-or-Internal with ctr's reason, not 'installation is not available'", async () => {
    const c = fakeContainerd();
    const d = deps(new ImageManager({ cacheDir: "/state", arch: "amd64", ctr: () => c.ctr, files: new MemoryFiles() }));
    await expect(
      imageHandlers(d).Pull(create(ImageServicePullRequestSchema, { containerd: system, imageRef: "registry.example/nope:v1" }), async () => {}, ctx),
    ).rejects.toThrow(/error pulling image: .*not found/);
  });

  it("says containerd is not running when it is not, and that there is no image service when nothing was wired", async () => {
    const d = deps(new ImageManager({ cacheDir: "/state", arch: "amd64", ctr: () => undefined, files: new MemoryFiles() }));
    await expect(list(d)).rejects.toMatchObject({ code: Code.FailedPrecondition, message: expect.stringContaining("containerd is not running on this node") });
    await expect(list(deps(undefined))).rejects.toMatchObject({ code: Code.Unimplemented, message: "the image service is not available on this node" });
  });
});
