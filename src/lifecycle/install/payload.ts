/**
 * The installer payload: /usr/install/<arch>/{vmlinuz, initramfs.zst, systemd-boot<efi>.efi, manifest.json} in
 * the image's layers (image/mkinstaller.sh). The agent is the installer: it unpacks these files, checks every
 * size and sha256 in manifest.json, and only then writes a slot.
 *
 * `fail` is a test-only manifest field ("crash", "panic", "not-ready") that local mode's simulated boot honours,
 * so automatic fallback can be exercised without a broken kernel. PID-1 mode ignores it.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { hostFiles as files } from "../../host/files/index.js";
import type { SlotPayload } from "../../boot/slot-files.js";
import { verifyingStream } from "../images/oci.js";
import type { PulledImage } from "../images/pull.js";
import { extractTar } from "../images/tar-read.js";

export type FailMarker = "crash" | "panic" | "not-ready";
export const FAIL_MARKERS: readonly FailMarker[] = ["crash", "panic", "not-ready"];

export interface FileSpec {
  path: string;
  size: number;
  sha256: string;
}

export interface InstallerManifest {
  schema: number;
  name?: string;
  version: string;
  arch: string;
  cmdline?: string;
  kernel: FileSpec;
  initramfs: FileSpec;
  rootfs?: Partial<FileSpec> & { location?: string };
  bootloader?: { kind?: string; version?: string | null; path?: string; bios?: BiosManifest };
  fail?: FailMarker;
}

/** GRUB for BIOS firmware (amd64 images): boot.img for the MBR, core.img for the BIOS boot partition. */
export interface BiosManifest {
  kind?: string;
  version?: string;
  boot: FileSpec;
  core: FileSpec;
}

export interface InstallerPayload {
  manifest: InstallerManifest;
  /** Folder holding the unpacked files. */
  dir: string;
  /** Image reference it came from (recorded in META). */
  image: string;
  kernel: string;
  initramfs: string;
  /** systemd-boot binary, when the image carries one. */
  efi?: string;
  /** GRUB's boot.img and core.img, when the image carries them (amd64). */
  bios?: { boot: string; core: string };
}

export const MANIFEST_NAME = "manifest.json";
export const installPrefix = (arch: string) => `usr/install/${arch}/`;

function checkManifest(m: InstallerManifest, arch: string, where: string): InstallerManifest {
  const bad = (why: string) => new Error(`${where}: manifest.json ${why}`);
  if (m.schema !== 1) throw bad(`has schema ${JSON.stringify(m.schema)}; this agent understands schema 1`);
  if (typeof m.version !== "string" || m.version === "") throw bad("has no version");
  if (m.arch !== arch) throw bad(`is for ${JSON.stringify(m.arch)}, this machine is ${arch}`);
  const validFile = (f: FileSpec | undefined) =>
    !!f && typeof f.path === "string" && /^[\w.+-]+$/.test(f.path) && Number.isInteger(f.size) && /^[0-9a-f]{64}$/.test(f.sha256 ?? "");
  for (const k of ["kernel", "initramfs"] as const) {
    if (!validFile(m[k])) throw bad(`has no valid "${k}" entry (path, size, sha256)`);
  }
  const bios = m.bootloader?.bios;
  if (bios !== undefined) {
    for (const k of ["boot", "core"] as const) {
      if (!validFile(bios[k])) throw bad(`has no valid "bootloader.bios.${k}" entry (path, size, sha256)`);
    }
  }
  if (m.fail !== undefined && !FAIL_MARKERS.includes(m.fail)) throw bad(`has an unknown fail marker ${JSON.stringify(m.fail)}`);
  return m;
}

async function sha256File(path: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of files.readStream(path, { chunkSize: 1 << 20 })) h.update(chunk);
  return h.digest("hex");
}

/** Every file the manifest lists must be present with its size and sha256 (the "verify" step). */
export async function verifyInstaller(dir: string, m: InstallerManifest): Promise<void> {
  const specs: FileSpec[] = [m.kernel, m.initramfs];
  if (m.bootloader?.bios) specs.push(m.bootloader.bios.boot, m.bootloader.bios.core);
  if (m.rootfs?.path && m.rootfs.size !== undefined && m.rootfs.sha256 && !m.rootfs.location) specs.push(m.rootfs as FileSpec);
  for (const f of specs) {
    const p = join(dir, f.path);
    const st = await files.stat(p).catch(() => undefined);
    if (!st?.isFile()) throw new Error(`installer file ${f.path} listed in manifest.json is missing from the image`);
    if (st.size !== f.size) throw new Error(`installer file ${f.path} is ${st.size} bytes, manifest.json says ${f.size}`);
    const got = await sha256File(p);
    if (got !== f.sha256) throw new Error(`installer file ${f.path} has sha256 ${got}, manifest.json says ${f.sha256}`);
  }
}

export async function readInstaller(dir: string, arch: string, image: string): Promise<InstallerPayload> {
  const raw = await files.readFile(join(dir, MANIFEST_NAME), "utf8").catch(() => undefined);
  if (raw === undefined) throw new Error(`image ${image} is not a machined installer: it has no /${installPrefix(arch)}${MANIFEST_NAME}`);
  let parsed: InstallerManifest;
  try {
    parsed = JSON.parse(raw) as InstallerManifest;
  } catch (err) {
    throw new Error(`image ${image}: manifest.json is not JSON: ${(err as Error).message}`);
  }
  const m = checkManifest(parsed, arch, `image ${image}`);
  const efiName = m.bootloader?.path;
  const efi = efiName && /^[\w.+-]+$/.test(efiName) ? join(dir, efiName) : undefined;
  const hasEfi = efi ? await files.stat(efi).then((s) => s.isFile(), () => false) : false;
  const bios = m.bootloader?.bios ? { boot: join(dir, m.bootloader.bios.boot.path), core: join(dir, m.bootloader.bios.core.path) } : undefined;
  return { manifest: m, dir, image, kernel: join(dir, m.kernel.path), initramfs: join(dir, m.initramfs.path), efi: hasEfi ? efi : undefined, bios };
}

/** Unpacks /usr/install/<arch>/ from every layer (later layers win) into `dir`, checking each layer's digest. */
export async function unpackInstaller(img: PulledImage, arch: string, dir: string): Promise<InstallerPayload> {
  await files.rm(dir, { recursive: true, force: true });
  await files.mkdir(dir, { recursive: true });
  const prefix = installPrefix(arch);
  for (const layer of img.manifest.layers) {
    const stream = verifyingStream(await img.source.stream(layer.digest), layer.digest, img.source.where);
    await extractTar(stream, (name) => {
      if (!name.startsWith(prefix)) return undefined;
      const rest = name.slice(prefix.length);
      return rest && !rest.includes("/") ? join(dir, rest) : undefined;
    });
  }
  return readInstaller(dir, arch, img.ref.full);
}

export function toSlotPayload(p: InstallerPayload, extraKernelArgs: string[] = []): SlotPayload {
  const cmdline = [p.manifest.cmdline ?? "", ...extraKernelArgs].filter(Boolean).join(" ");
  return { osVersion: p.manifest.version, image: p.image, kernel: p.kernel, initramfs: p.initramfs, cmdline };
}

/**
 * Local mode's first install has no installer image to copy: it writes placeholder boot files that name the
 * running agent's version. A local node never boots them; upgrades then bring real (or test) payloads.
 */
export async function writeLocalPayload(dir: string, version: string, arch: string): Promise<InstallerPayload> {
  await files.rm(dir, { recursive: true, force: true });
  await files.mkdir(dir, { recursive: true });
  const file = async (name: string, text: string): Promise<FileSpec> => {
    const data = Buffer.from(text);
    await files.writeFile(join(dir, name), data);
    return { path: name, size: data.length, sha256: createHash("sha256").update(data).digest("hex") };
  };
  const manifest: InstallerManifest = {
    schema: 1,
    name: "machined",
    version,
    arch,
    cmdline: "console=ttyS0 panic=10",
    kernel: await file("vmlinuz", `machined local-mode placeholder kernel ${version}\n`),
    initramfs: await file("initramfs.zst", `machined local-mode placeholder initramfs ${version}\n`),
  };
  await files.writeFile(join(dir, MANIFEST_NAME), JSON.stringify(manifest, null, 2));
  return readInstaller(dir, arch, "local");
}
