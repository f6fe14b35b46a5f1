/** Installer images without a registry: tar reading, OCI layouts and archives, payload verification. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, readFile, rm, writeFile, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import { tarFiles } from "../../../src/machinery/archive/tar.js";
import { cleanTarName, extractTar } from "../../../src/lifecycle/images/tar-read.js";
import { parseImageRef, pinnedName } from "../../../src/lifecycle/images/image-ref.js";
import { ImagePuller } from "../../../src/lifecycle/images/pull.js";
import { toSlotPayload, unpackInstaller, verifyInstaller } from "../../../src/lifecycle/install/payload.js";
import { ARCH, addInstallerImage } from "./fixtures.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "machined-image-"));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

const chunks = (b: Buffer, size = 7000) => Readable.from((function* () {
  for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size);
})());

describe("tar reader", () => {
  it("extracts picked files from plain and gzip streams, including PAX long names, across odd chunk sizes", async () => {
    const long = `usr/install/${"d".repeat(120)}/file.bin`;
    const big = Buffer.alloc(70_001, 7);
    const tar = tarFiles([
      { name: "a.txt", data: Buffer.from("alpha") },
      { name: long, data: big },
      { name: "skip/me", data: Buffer.from("no") },
    ]);
    for (const input of [tar, gzipSync(tar)]) {
      const out = join(dir, `x-${input === tar ? "plain" : "gz"}`);
      const res = await extractTar(chunks(input), (n) => (n.startsWith("skip/") ? undefined : join(out, n)));
      expect(res.written).toEqual(["a.txt", long]);
      expect(await readFile(join(out, "a.txt"), "utf8")).toBe("alpha");
      expect((await readFile(join(out, long))).equals(big)).toBe(true);
    }
  });

  it("refuses names that climb out and zstd layers", async () => {
    expect(cleanTarName("./usr//x/")).toBe("usr/x");
    expect(cleanTarName("../etc/passwd")).toBeUndefined();
    const zstd = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0]);
    await expect(extractTar(chunks(zstd), () => undefined)).rejects.toThrow(/zstd-compressed/);
  });
});

describe("image references", () => {
  it("normalises registry names and keeps local layout paths", () => {
    expect(parseImageRef("alpine").full).toBe("docker.io/library/alpine:latest");
    expect(parseImageRef("127.0.0.1:5000/test/installer:v2")).toMatchObject({ registry: "127.0.0.1:5000", repository: "test/installer", tag: "v2" });
    const d = `sha256:${"a".repeat(64)}`;
    expect(pinnedName(parseImageRef("ghcr.io/x/installer:v1"), d)).toBe(`ghcr.io/x/installer@${d}`);
    expect(parseImageRef("oci:/tmp/lay:out/dir:v3")).toMatchObject({ kind: "oci", path: "/tmp/lay:out/dir", tag: "v3" });
    expect(() => parseImageRef("")).toThrow("installer image name is required");
    expect(() => parseImageRef("oci:relative")).toThrow(/absolute path/);
    expect(() => parseImageRef("Bad/Name")).toThrow(/invalid repository name/);
  });
});

describe("OCI layouts and payloads", () => {
  it("pulls from an oci: layout, unpacks /usr/install/<arch> and verifies every file", async () => {
    const layout = join(dir, "layout");
    await addInstallerImage(layout, "v1", { version: "v1.0.0" });
    const ref = await addInstallerImage(layout, "v2", { version: "v2.0.0" });
    const puller = new ImagePuller({ cacheDir: join(dir, "cache"), arch: ARCH });
    const progress: string[] = [];
    const img = await puller.pull({ ref, onProgress: (p) => progress.push(p.status) });
    expect(img.via).toBe("oci-layout");
    expect(img.name).toMatch(new RegExp(`^oci:${layout}@sha256:[0-9a-f]{64}$`));
    expect(progress).toEqual(["already-exists"]);
    const p = await unpackInstaller(img, ARCH, join(dir, "unpacked"));
    await verifyInstaller(p.dir, p.manifest);
    expect(p.manifest.version).toBe("v2.0.0");
    expect(await readFile(p.kernel, "utf8")).toBe("kernel v2.0.0\n");
    expect(p.efi).toMatch(/systemd-boot(x64|aa64)\.efi$/);
    expect(toSlotPayload(p, ["quiet"])).toMatchObject({ osVersion: "v2.0.0", image: ref, cmdline: "console=ttyS0 panic=10 quiet" });
    await expect(puller.pull({ ref: `oci:${layout}:v9` })).rejects.toThrow(/no image tagged "v9" \(has: v1, v2\)/);
  });

  it("refuses a payload whose file does not match manifest.json", async () => {
    const layout = join(dir, "bad");
    const ref = await addInstallerImage(layout, "v1", { version: "v1.0.0", corrupt: true });
    const img = await new ImagePuller({ cacheDir: join(dir, "cache"), arch: ARCH }).pull({ ref });
    const p = await unpackInstaller(img, ARCH, join(dir, "bad-unpacked"));
    await expect(verifyInstaller(p.dir, p.manifest)).rejects.toThrow(/installer file vmlinuz has sha256 [0-9a-f]{64}, manifest.json says/);
  });

  it("detects a tampered blob in the layout by its digest", async () => {
    const layout = join(dir, "tampered");
    const ref = await addInstallerImage(layout, "v1", { version: "v1.0.0" });
    const img = await new ImagePuller({ cacheDir: join(dir, "cache"), arch: ARCH }).pull({ ref });
    const layerFile = join(layout, "blobs", "sha256", img.manifest.layers[0].digest.slice(7));
    const bytes = await readFile(layerFile);
    bytes[bytes.length - 9] ^= 1; // inside the gzip trailer's CRC: the tar still parses, the digest must not match
    await writeFile(layerFile, bytes);
    await expect(unpackInstaller(img, ARCH, join(dir, "tampered-unpacked"))).rejects.toThrow(/digest|crc|check/i);
  });

  it("reads an oci-archive file (what make image writes) once into the cache", async () => {
    const layout = join(dir, "for-archive");
    await addInstallerImage(layout, "v7", { version: "v7.0.0" });
    const files = await readdir(layout);
    const { execFileSync } = await import("node:child_process");
    const archive = join(dir, "installer.oci.tar");
    execFileSync("tar", ["-C", layout, "-cf", archive, ...files]);
    const puller = new ImagePuller({ cacheDir: join(dir, "cache"), arch: ARCH });
    const img = await puller.pull({ ref: `oci-archive:${archive}:v7` });
    const p = await unpackInstaller(img, ARCH, join(dir, "archive-unpacked"));
    expect(p.manifest.version).toBe("v7.0.0");
    expect((await readdir(join(dir, "cache", "archives"))).filter((n) => !n.endsWith(".tmp"))).toHaveLength(1);
  });
});

describe("tar reader and umoci layers", () => {
  it("accepts a layer that ends right after the last file's data (no padding, no end blocks), as umoci writes", async () => {
    const tar = tarFiles([{ name: "usr/install/x/vmlinuz", data: Buffer.from("hello\n") }]);
    const cut = tar.subarray(0, 512 + 6);
    const out = join(dir, "cut");
    const res = await extractTar(chunks(gzipSync(cut)), (n) => join(out, n));
    expect(res.written).toEqual(["usr/install/x/vmlinuz"]);
    expect(await readFile(join(out, "usr/install/x/vmlinuz"), "utf8")).toBe("hello\n");
    // but a file whose data is cut short is an error
    await expect(extractTar(chunks(tar.subarray(0, 512 + 3)), (n) => join(out, "short", n))).rejects.toThrow(/ends 3 bytes early/);
  });
});
