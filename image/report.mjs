#!/usr/bin/env node
// Last step of `make image`: build time and output sizes (file size; unpacked size where it means something),
// printed and written to build/<arch>/build-report.txt.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const { ARCH, OUT, WORK, ROOTFS, STAGE } = process.env;
const started = Number(process.argv[2] ?? Date.now());
const du = (p) => Number(execFileSync("du", ["-sb", p], { encoding: "utf8" }).split("\t")[0]);
const allocated = (p) => Number(execFileSync("du", ["-sB1", p], { encoding: "utf8" }).split("\t")[0]);
const mib = (n) => `${(n / 2 ** 20).toFixed(1)} MiB`;
const stageZst = fs.statSync(path.join(WORK, "stage.cpio.zst")).size;
const rows = [
  ["vmlinuz", fs.statSync(path.join(OUT, "vmlinuz")).size, null, "Debian kernel image"],
  ["rootfs.sqsh", fs.statSync(path.join(OUT, "rootfs.sqsh")).size, du(ROOTFS), "read-only root (squashfs zstd)"],
  ["  stage (in initramfs)", stageZst, du(STAGE), "node + agent + early modules (cpio zstd)"],
  ["initramfs.zst", fs.statSync(path.join(OUT, "initramfs.zst")).size, fs.statSync(path.join(OUT, "rootfs.sqsh")).size + du(STAGE), "cpio(rootfs.sqsh) ++ stage; unpacked = tmpfs at boot"],
  ["disk.raw", allocated(path.join(OUT, "disk.raw")), fs.statSync(path.join(OUT, "disk.raw")).size, "allocated / apparent (sparse GPT + ESP)"],
  ...(ARCH === "amd64" ? [["grub-core.img", fs.statSync(path.join(OUT, "grub-core.img")).size, null, "GRUB for BIOS firmware (modules embedded)"]] : []),
  [`installer-${ARCH}.oci.tar`, fs.statSync(path.join(OUT, `installer-${ARCH}.oci.tar`)).size, null, "OCI layout, 1 layer"],
];
// Kubernetes pods get no network without the flannel CNI plugin (from `make kube-images`, not Debian): said here so
// make cluster and the Kubernetes VM test can refuse an image built before it.
const cniDir = path.join(ROOTFS, "opt/cni/bin");
const cni = fs.existsSync(cniDir) ? fs.readdirSync(cniDir).sort() : [];
const lines = [
  `machined image ${ARCH}: built in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  ...rows.map(([n, c, u, what]) => `  ${n.padEnd(26)} ${mib(c).padStart(11)}${u ? `  (unpacked ${mib(u)})` : ""}  ${what}`),
  `  CNI plugins: ${cni.join(" ") || "none"}${cni.includes("flannel") ? "" : " (no flannel: run make kube-images, then make image again)"}`,
];
const text = lines.join("\n") + "\n";
fs.writeFileSync(path.join(OUT, "build-report.txt"), text);
process.stdout.write(text);
