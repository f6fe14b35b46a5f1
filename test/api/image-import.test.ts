/**
 * ImageService/Import over mTLS into the containerd the node supervises (root + Debian's containerd), as
 * upstream's api ImagesSuite.TestImportRemove does: the instance first, then the archive in 4 KiB chunks; the
 * reply names the image; Remove then deletes it, and a second Remove is NotFound. The archive is a docker-archive
 * built here (one small layer), since the tests keep no upstream image tarball.
 */
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Metadata, status } from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { ApplyConfigurationRequest_Mode as Mode } from "../../src/machinery/api/gen/machine/machine_pb.js";
import { ContainerDriver, ContainerdNamespace } from "../../src/machinery/api/gen/common/common_pb.js";
import {
  ImageServiceImportRequestSchema,
  ImageServiceImportResponseSchema,
  ImageServiceRemoveRequestSchema,
  ImageService,
  type ImageServiceImportRequest,
} from "../../src/machinery/api/gen/machine/image_pb.js";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { tarFiles } from "../../src/machinery/archive/tar.js";
import type { TestClient } from "../helpers/client.js";
import { freePort } from "../supervisor/helpers.js";
import { apply, clusterConfigs, eventually, insecureClient, mtlsClient, startNode, talosconfigCreds, version, type Harness } from "./harness.js";

function skipReason(): string | null {
  if (process.getuid?.() !== 0) return "needs root";
  for (const b of ["containerd", "ctr", "runc"]) {
    try {
      execFileSync("sh", ["-c", `command -v ${b}`], { stdio: "pipe" });
    } catch {
      return `binary ${b} not installed`;
    }
  }
  return null;
}
const skip = skipReason();
if (skip) console.log(`skipping image import API test: ${skip}`);

const NAME = "registry.test/machined/tiny:i-was-a-digest";

/** A docker-archive (what `docker save` writes): manifest.json, the image config, one uncompressed layer. */
function dockerArchive(): Buffer {
  const layer = tarFiles([{ name: "hello.txt", data: Buffer.from("hello from an imported image\n") }]);
  const diffId = `sha256:${createHash("sha256").update(layer).digest("hex")}`;
  const arch = process.arch === "arm64" ? "arm64" : "amd64";
  const config = Buffer.from(JSON.stringify({ architecture: arch, os: "linux", config: {}, rootfs: { type: "layers", diff_ids: [diffId] } }));
  const configName = `${createHash("sha256").update(config).digest("hex")}.json`;
  const manifest = Buffer.from(JSON.stringify([{ Config: configName, RepoTags: [NAME], Layers: ["layer.tar"] }]));
  return tarFiles([
    { name: "manifest.json", data: manifest },
    { name: configName, data: config },
    { name: "layer.tar", data: layer },
  ]);
}

/** A client stream: messages in order, then half-close; resolves with the reply or the status. */
function importStream(c: TestClient, msgs: Partial<ImageServiceImportRequest>[]): Promise<{ name: string }> {
  return new Promise((resolve, reject) => {
    const call = c.raw.makeClientStreamRequest(
      "/machine.ImageService/Import",
      (m: ImageServiceImportRequest) => Buffer.from(toBinary(ImageServiceImportRequestSchema, m)),
      (b: Buffer) => fromBinary(ImageServiceImportResponseSchema, b),
      new Metadata(),
      {},
      (err, res) => (err ? reject(err) : resolve(res as { name: string })),
    );
    for (const m of msgs) call.write(create(ImageServiceImportRequestSchema, m as never));
    call.end();
  });
}

const cri = { driver: ContainerDriver.CRI, namespace: ContainerdNamespace.NS_CRI };

describe.skipIf(!!skip)("image import", () => {
  let h: Harness;
  let admin: TestClient;

  beforeAll(async () => {
    const etcd = { clientPort: await freePort(), peerPort: await freePort() };
    h = await startNode({ services: true, serviceOptions: { containerd: { cri: false }, etcd } });
    const cfgs = await clusterConfigs();
    const c = insecureClient(h);
    await apply(c, cfgs.controlplane, Mode.AUTO);
    c.close();
    admin = mtlsClient(h, talosconfigCreds(cfgs.talosconfig));
    await eventually(() => version(admin));
    await eventually(async () => expect(h.node.services.supervisor.info("containerd")?.state).toBe("Running"), 30_000);
  }, 60_000);
  afterAll(async () => {
    admin?.close();
    await h?.stop();
  });

  it("imports an archive sent in chunks, then removes it (upstream TestImportRemove)", async () => {
    const archive = dockerArchive();
    const chunks: Partial<ImageServiceImportRequest>[] = [];
    for (let off = 0; off < archive.length; off += 4096) chunks.push({ request: { case: "imageChunk", value: { bytes: archive.subarray(off, off + 4096) } } as never });
    const res = await importStream(admin, [{ request: { case: "containerd", value: cri } as never }, ...chunks]);
    expect(res.name).toBe(NAME);
    const remove = () => admin.unary(ImageService, "Remove", ImageServiceRemoveRequestSchema, EmptySchema, { containerd: cri, imageRef: NAME });
    await remove();
    expect(await remove().catch((e) => e.code)).toBe(status.NOT_FOUND);
  }, 60_000);

  it("refuses a stream without the instance first, and a broken archive, with upstream's texts", async () => {
    const noInstance = await importStream(admin, [{ request: { case: "imageChunk", value: { bytes: Buffer.from("x") } } as never }]).catch((e) => e);
    expect(noInstance).toMatchObject({ code: status.INVALID_ARGUMENT, details: "containerd instance is required" });
    const broken = await importStream(admin, [{ request: { case: "containerd", value: cri } as never }, { request: { case: "imageChunk", value: { bytes: Buffer.alloc(2048, 7) } } as never }]).catch((e) => e);
    expect(broken.code).toBe(status.INTERNAL);
    expect(broken.details).toMatch(/^failed to import image: /);
  }, 30_000);
});
