#!/usr/bin/env node
// Step 5b: build/<arch>/manifest.json — what a slot consists of, for the installer image and the upgrade path:
// file names, sizes and sha256 (the agent verifies them before it switches the boot entry), the default kernel
// cmdline, and the component versions (from the .deb control fields and the npm package).
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const { ARCH, OUT, WORK, CACHE, SOURCE_DATE_EPOCH } = process.env;
const sha256 = (f) => createHash("sha256").update(fs.readFileSync(f)).digest("hex");
const file = (name, extra = {}) => {
  const p = path.join(OUT, name);
  return { path: name, size: fs.statSync(p).size, sha256: sha256(p), ...extra };
};
const debVersion = (pkg) => {
  const deb = fs.readdirSync(path.join(CACHE, "debs")).find((f) => f.startsWith(`${pkg}_`));
  return deb ? execFileSync("dpkg-deb", ["-f", path.join(CACHE, "debs", deb), "Version"], { encoding: "utf8" }).trim() : null;
};
const kernelRelease = fs.readFileSync(path.join(CACHE, "kernel-release"), "utf8").trim();
const rootfsCpio = fs.statSync(path.join(OUT, "initramfs.zst")).size - fs.statSync(path.join(WORK, "stage.cpio.zst")).size;

const manifest = {
  schema: 1,
  name: "machined",
  version: fs.readFileSync(path.join(WORK, "version"), "utf8").trim(),
  arch: ARCH,
  created: new Date(Number(SOURCE_DATE_EPOCH) * 1000).toISOString(),
  cmdline: fs.readFileSync(path.join(WORK, "cmdline"), "utf8").trim(),
  kernel: file("vmlinuz", { release: kernelRelease }),
  initramfs: file("initramfs.zst", {
    // two concatenated newc archives; the kernel unpacks both into the initial rootfs
    segments: [
      { offset: 0, size: rootfsCpio, format: "cpio", contents: "/rootfs.sqsh" },
      { offset: rootfsCpio, size: fs.statSync(path.join(WORK, "stage.cpio.zst")).size, format: "cpio+zstd", contents: "stage" },
    ],
  }),
  rootfs: { ...file("rootfs.sqsh"), format: "squashfs", compression: "zstd", location: "/rootfs.sqsh in initramfs.zst" },
  bootloader: {
    kind: "systemd-boot",
    version: debVersion("systemd-boot-efi"),
    path: `systemd-boot${ARCH === "amd64" ? "x64" : "aa64"}.efi`,
    // BIOS firmware boots GRUB (amd64 only): boot.img for the MBR, core.img for the BIOS boot partition
    ...(ARCH === "amd64"
      ? { bios: { kind: "grub", version: fs.readFileSync(path.join(WORK, "grub-version"), "utf8").trim(), boot: file("grub-boot.img"), core: file("grub-core.img") } }
      : {}),
  },
  components: {
    kernel: debVersion(`linux-image-${kernelRelease}`),
    node: process.env.NODE_VERSION,
    containerd: debVersion("containerd"),
    runc: debVersion("runc"),
    etcd: debVersion("etcd-server"),
    cni: debVersion("containernetworking-plugins"),
    iproute2: debVersion("iproute2"),
    xfsprogs: debVersion("xfsprogs"),
    glibc: debVersion("libc6"),
  },
};
fs.writeFileSync(path.join(OUT, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
