/**
 * Test installer images built in-process: an OCI image layout folder whose single gzip layer holds
 * /usr/install/<arch>/{vmlinuz, initramfs.zst, systemd-boot<efi>.efi, manifest.json}, the shape
 * image/mkinstaller.sh produces. Tags are added to one layout, so `oci:<dir>:<tag>` names each version.
 * File contents carry the version, so what a slot holds can be checked byte for byte.
 */
import { createHash } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { tarFiles } from "../../../src/machinery/archive/tar.js";
import type { FailMarker, InstallerManifest } from "../../../src/lifecycle/install/payload.js";

export const ARCH = process.arch === "arm64" ? "arm64" : "amd64";
const EFI = ARCH === "amd64" ? "x64" : "aa64";

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const digest = (b: Uint8Array) => `sha256:${sha(b)}`;

export interface FakeInstaller {
  version: string;
  fail?: FailMarker;
  /** Extra bytes in the kernel, to make a payload of a given size (benchmarks). */
  kernelSize?: number;
  initramfsSize?: number;
  /** Corrupt the kernel after the manifest was written (verify must refuse it). */
  corrupt?: boolean;
}

export function payloadFiles(f: FakeInstaller): { name: string; data: Buffer }[] {
  const fill = (text: string, size?: number) => {
    const head = Buffer.from(text);
    return size && size > head.length ? Buffer.concat([head, Buffer.alloc(size - head.length, 0x5a)]) : head;
  };
  const kernel = fill(`kernel ${f.version}\n`, f.kernelSize);
  const initramfs = fill(`initramfs ${f.version}\n`, f.initramfsSize);
  const efi = Buffer.from(`systemd-boot ${f.version}\n`);
  const manifest: InstallerManifest = {
    schema: 1,
    name: "machined",
    version: f.version,
    arch: ARCH,
    cmdline: "console=ttyS0 panic=10",
    kernel: { path: "vmlinuz", size: kernel.length, sha256: sha(kernel) },
    initramfs: { path: "initramfs.zst", size: initramfs.length, sha256: sha(initramfs) },
    bootloader: { kind: "systemd-boot", path: `systemd-boot${EFI}.efi` },
    ...(f.fail ? { fail: f.fail } : {}),
  };
  if (f.corrupt) kernel[0] ^= 0xff;
  const dir = `usr/install/${ARCH}`;
  return [
    { name: `${dir}/vmlinuz`, data: kernel },
    { name: `${dir}/initramfs.zst`, data: initramfs },
    { name: `${dir}/systemd-boot${EFI}.efi`, data: efi },
    { name: `${dir}/manifest.json`, data: Buffer.from(JSON.stringify(manifest, null, 2)) },
  ];
}

async function putBlob(dir: string, data: Buffer): Promise<{ digest: string; size: number }> {
  const d = digest(data);
  await writeFile(join(dir, "blobs", "sha256", d.slice(7)), data);
  return { digest: d, size: data.length };
}

/** Adds `tag` → a fake installer image to the OCI layout at `dir` (created when missing). */
export async function addInstallerImage(dir: string, tag: string, f: FakeInstaller): Promise<string> {
  await mkdir(join(dir, "blobs", "sha256"), { recursive: true });
  await writeFile(join(dir, "oci-layout"), '{"imageLayoutVersion":"1.0.0"}');
  const tar = tarFiles(payloadFiles(f));
  const layer = await putBlob(dir, gzipSync(tar));
  const config = await putBlob(dir, Buffer.from(JSON.stringify({ architecture: ARCH, os: "linux", rootfs: { type: "layers", diff_ids: [digest(tar)] } })));
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: { mediaType: "application/vnd.oci.image.config.v1+json", ...config },
      layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", ...layer }],
    }),
  );
  const m = await putBlob(dir, manifest);
  let index: { schemaVersion: number; manifests: { annotations?: Record<string, string> }[] } = { schemaVersion: 2, manifests: [] };
  try {
    index = JSON.parse(await readFile(join(dir, "index.json"), "utf8"));
  } catch {
    // new layout
  }
  const key = "org.opencontainers.image.ref.name";
  index.manifests = index.manifests.filter((x) => x.annotations?.[key] !== tag);
  index.manifests.push({ mediaType: "application/vnd.oci.image.manifest.v1+json", ...m, annotations: { [key]: tag } } as never);
  await writeFile(join(dir, "index.json"), JSON.stringify(index));
  return `oci:${dir}:${tag}`;
}
