/**
 * `npx tsx scripts/bench-install.ts [--installer build/amd64/installer-amd64.oci.tar]`: figures, not assertions.
 *   - install time onto a fresh 4 GiB sparse disk-image file (partition + format + slot A), and its allocation;
 *   - pull/unpack/verify time of the installer (oci-archive from `make image` when present);
 *   - upgrade write time (slot B: boot files onto the ESP, entries, META).
 * Without a built installer it uses a synthetic payload of the real sizes (8 MiB kernel, 141 MiB initramfs).
 */
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, open, rm, truncate, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { diskFromFile } from "../src/host/disks.js";
import { installSystem } from "../src/lifecycle/install/install.js";
import { readInstaller, unpackInstaller, verifyInstaller, type InstallerPayload } from "../src/lifecycle/install/payload.js";
import { ImagePuller } from "../src/lifecycle/images/pull.js";
import { quiet } from "../src/lifecycle/install/tasks.js";
import { writeInactiveSlot } from "../src/lifecycle/install/upgrade.js";

const arch = process.arch === "arm64" ? "arm64" : "amd64";
const argIdx = process.argv.indexOf("--installer");
const installer = resolve(argIdx > 0 ? process.argv[argIdx + 1] : `build/${arch}/installer-${arch}.oci.tar`);
const ms = (t: number) => `${Math.round(performance.now() - t)} ms`;

async function syntheticPayload(dir: string): Promise<InstallerPayload> {
  await mkdir(dir, { recursive: true });
  const file = async (name: string, size: number) => {
    const data = Buffer.alloc(size);
    for (let i = 0; i < size; i += 4096) data.writeUInt32LE(i, i); // not all zeros: nothing can skip it
    await writeFile(join(dir, name), data);
    return { path: name, size, sha256: createHash("sha256").update(data).digest("hex") };
  };
  const manifest = { schema: 1, version: "bench", arch, cmdline: "console=ttyS0", kernel: await file("vmlinuz", 8 << 20), initramfs: await file("initramfs.zst", 141 << 20) };
  await writeFile(join(dir, "manifest.json"), JSON.stringify(manifest));
  return readInstaller(dir, arch, "synthetic");
}

const dir = await mkdtemp(join(tmpdir(), "machined-bench-install-"));
try {
  let payload: InstallerPayload;
  if (existsSync(installer)) {
    const t = performance.now();
    const img = await new ImagePuller({ cacheDir: join(dir, "cache"), arch }).pull({ ref: `oci-archive:${installer}` });
    payload = await unpackInstaller(img, arch, join(dir, "payload"));
    await verifyInstaller(payload.dir, payload.manifest);
    console.log(`installer ${installer} (${payload.manifest.version}): oci-archive read + unpack + verify ${ms(t)}`);
  } else {
    payload = await syntheticPayload(join(dir, "payload"));
    console.log(`no built installer at ${installer}; synthetic payload of 8 + 141 MiB`);
  }

  const img = join(dir, "disk.img");
  const fh = await open(img, "w");
  await fh.close();
  await truncate(img, 4 * 2 ** 30);
  let t = performance.now();
  const { disk } = await installSystem(await diskFromFile(img), payload, { arch, spec: {}, report: quiet });
  console.log(`install onto a 4 GiB disk-image file: ${ms(t)} (allocated ${execFileSync("du", ["-h", img]).toString().split("\t")[0]})`);

  t = performance.now();
  const rec = await writeInactiveSlot(disk, payload, { tries: 3, extraKernelArgs: [], report: quiet });
  console.log(`upgrade write into slot ${rec.to}: ${ms(t)} (kernel ${payload.manifest.kernel.size} + initramfs ${payload.manifest.initramfs.size} bytes)`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
