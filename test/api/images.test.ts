/**
 * ImageService on a node without an install target (item 5 of issue 9): `talosctl image list/pull/remove` go to
 * the node's image service, which needs containerd, not an install manager. containerd's `ctr` is a FakeTools
 * stand-in holding an image store in memory (the real daemon is exercised in lifecycle/install/registry.test.ts),
 * and the cache is a MemoryFiles.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { imageHandlers, legacyImageHandlers } from "../../src/api/handlers/images.js";
import type { ApiDeps } from "../../src/api/deps.js";
import type { CallContext } from "../../src/api/transport/context.js";
import { ContainerDriver, ContainerdNamespace } from "../../src/machinery/api/gen/common/common_pb.js";
import { ImageServiceListRequestSchema, ImageServicePullRequestSchema, ImageServiceRemoveRequestSchema } from "../../src/machinery/api/gen/machine/image_pb.js";
import { ImageListRequestSchema, ImagePullRequestSchema } from "../../src/machinery/api/gen/machine/machine_pb.js";
import { Code } from "../../src/machinery/errors.js";
import { MemoryFiles } from "../../src/host/files/index.js";
import { FakeTools } from "../../src/host/tools.js";
import { ImageManager } from "../../src/lifecycle/images/manager.js";
import { MediaType, sha256Digest } from "../../src/lifecycle/images/oci.js";
import { Ctr } from "../../src/supervisor/ctr.js";

const ctx = { signal: new AbortController().signal } as CallContext;
const system = { driver: ContainerDriver.CONTAINERD, namespace: ContainerdNamespace.NS_SYSTEM };
/** `talosctl image ls` without flags: the CRI containerd's k8s.io namespace. */
const cri = { driver: ContainerDriver.CRI, namespace: ContainerdNamespace.NS_CRI };

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
  const store = new Map<string, Map<string, string>>(); // "socket ns" → name → digest
  const blobs = new Map<string, Buffer>();
  const registry = new Map<string, ReturnType<typeof image>>([["registry.example/app:v1", image("2025-01-02T03:04:05Z")]]);
  const tools = new FakeTools().on("ctr", (args) => {
    // Each containerd (its socket) has its own namespaces.
    const ns = args[args.indexOf("-n") + 1];
    const key = `${args[args.indexOf("-a") + 1]} ${ns}`;
    const cmd = args.slice(args.indexOf("-n") + 2);
    const names = store.get(key) ?? new Map<string, string>();
    store.set(key, names);
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
  return { ctr: (socket = "/system/run/containerd/containerd.sock") => new Ctr(socket, "ctr", tools), store, tools };
}

/** What a configured node without an install target hands the API: services, images, no install. */
function deps(images: ImageManager | undefined): ApiDeps {
  return { images } as unknown as ApiDeps;
}

async function list(d: ApiDeps, containerd = system) {
  const out: { name: string; digest: string; size: bigint; createdAt?: { seconds: bigint } }[] = [];
  await imageHandlers(d).List(create(ImageServiceListRequestSchema, { containerd }), async (m: (typeof out)[number]) => void out.push(m), ctx);
  return out;
}


describe("ImageService without an install target", () => {
  it("pulls through containerd, lists with size and creation date, and removes", async () => {
    const c = fakeContainerd();
    const images = new ImageManager({ cacheDir: "/state", arch: "amd64", ctr: () => c.ctr(), files: new MemoryFiles() });
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
    const d = deps(new ImageManager({ cacheDir: "/state", arch: "amd64", ctr: () => c.ctr(), files: new MemoryFiles() }));
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

describe("the CRI image store", () => {
  const CRI_SOCKET = "/run/containerd/containerd.sock";
  const twoStores = () => {
    const c = fakeContainerd();
    const images = new ImageManager({ cacheDir: "/state", arch: "amd64", ctr: () => c.ctr(), criCtr: () => c.ctr(CRI_SOCKET), files: new MemoryFiles() });
    return { c, d: deps(images) };
  };

  it("the CRI namespace (k8s.io) is the CRI containerd's, the system namespace the system containerd's", async () => {
    const { c, d } = twoStores();
    await imageHandlers(d).Pull(create(ImageServicePullRequestSchema, { containerd: cri, imageRef: "registry.example/app:v1" }), async () => {}, ctx);
    const pull = c.tools.calls.find((a) => a.includes("pull"))!;
    expect(pull.join(" ")).toContain(CRI_SOCKET);
    expect(pull[pull.indexOf("-n") + 1]).toBe("k8s.io");
    expect((await list(d, cri)).map((i) => i.name)).toEqual(["registry.example/app:v1"]);
    expect(await list(d, system)).toEqual([]);
    // CRI/system is machined's own store, the system containerd's (talosctl upgrade pulls the installer with it).
    expect(await list(d, { driver: ContainerDriver.CRI, namespace: ContainerdNamespace.NS_SYSTEM })).toEqual([]);
    expect([...c.store.keys()].sort()).toEqual([`${CRI_SOCKET} k8s.io`, "/system/run/containerd/containerd.sock system"]);
  });

  it("the legacy MachineService ImagePull/ImageList (talosctl upgrade-k8s pre-pulls with them) use the CRI containerd", async () => {
    const { c, d } = twoStores();
    const reply = await legacyImageHandlers(d).ImagePull(create(ImagePullRequestSchema, { namespace: ContainerdNamespace.NS_CRI, reference: "registry.example/app:v1" }), ctx);
    expect(reply).toEqual({ messages: [{}] });
    expect(c.tools.calls.find((a) => a.includes("pull"))!.join(" ")).toContain(CRI_SOCKET);
    const got: { name: string }[] = [];
    await legacyImageHandlers(d).ImageList(create(ImageListRequestSchema, { namespace: ContainerdNamespace.NS_CRI }), async (m: { name: string }) => void got.push(m), ctx);
    expect(got.map((x) => x.name)).toEqual(["registry.example/app:v1"]);
    await expect(legacyImageHandlers(d).ImagePull(create(ImagePullRequestSchema, { namespace: ContainerdNamespace.NS_CRI, reference: "registry.example/nope:v1" }), ctx)).rejects.toThrow(
      /error pulling image: .*not found/,
    );
    await expect(legacyImageHandlers(d).ImagePull(create(ImagePullRequestSchema, { reference: "registry.example/app:v1" }), ctx)).rejects.toMatchObject({ code: Code.InvalidArgument });
  });

  it("a node without Kubernetes serves the CRI namespace from its one containerd; one whose CRI containerd is not running yet says so", async () => {
    const c = fakeContainerd();
    const none = deps(new ImageManager({ cacheDir: "/state", arch: "amd64", ctr: () => c.ctr(), files: new MemoryFiles() }));
    await imageHandlers(none).Pull(create(ImageServicePullRequestSchema, { containerd: cri, imageRef: "registry.example/app:v1" }), async () => {}, ctx);
    expect([...c.store.keys()]).toEqual(["/system/run/containerd/containerd.sock k8s.io"]);
    expect((await list(none, cri)).map((i) => i.name)).toEqual(["registry.example/app:v1"]);

    const d = fakeContainerd();
    const notYet = deps(new ImageManager({ cacheDir: "/state", arch: "amd64", ctr: () => d.ctr(), criCtr: () => undefined, files: new MemoryFiles() }));
    await expect(
      imageHandlers(notYet).Pull(create(ImageServicePullRequestSchema, { containerd: cri, imageRef: "registry.example/app:v1" }), async () => {}, ctx),
    ).rejects.toMatchObject({ code: Code.FailedPrecondition, message: expect.stringContaining("CRI containerd is not running") });
    await expect(list(notYet, cri)).rejects.toMatchObject({ code: Code.FailedPrecondition });
    expect(d.tools.calls.some((a) => a.includes("pull"))).toBe(false);
  });
});
