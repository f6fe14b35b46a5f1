/**
 * First install: choose the disk, partition and format it, write slot A (blessed at once: there is nothing to
 * fall back to). Local mode installs only into disk-image files; a block device named by the config is left
 * alone there, so a developer's disks are never touched.
 */
import { hostFiles } from "../../host/files/index.js";
import { planLayout, writeLayout, type Arch } from "../../boot/layout.js";
import { describeDisk, resolveInstallDisk, type DiskSelector } from "../../boot/selector.js";
import { installFirstSlot, type UpgradeRecord } from "../../boot/slots.js";
import { discoverDisks, type DiskInfo } from "../../host/disks.js";
import { failedPrecondition } from "../../machinery/errors.js";
import { MANIFEST_NAME, toSlotPayload, type InstallerPayload } from "./payload.js";
import { SystemDisk } from "./system-disk.js";
import type { Reporter } from "./tasks.js";

export interface InstallSpec {
  disk?: string;
  diskSelector?: DiskSelector;
  wipe?: boolean;
  extraKernelArgs?: string[];
}

export interface DiscoveryOptions {
  sysRoot?: string;
  devRoot?: string;
  /** Disk-image files offered as candidates. */
  files?: string[];
}

/** Why local mode will not install for this spec (a device, or nothing to choose from), or undefined. */
export async function localSkipReason(spec: InstallSpec, files: string[]): Promise<string | undefined> {
  if (spec.disk) {
    const st = await hostFiles.stat(spec.disk).catch(() => undefined);
    if (st?.isFile()) return undefined;
    if (st || spec.disk.startsWith("/dev/")) return `machine.install.disk ${spec.disk} is not a disk-image file; local mode never installs onto devices`;
    throw failedPrecondition(
      `machine.install.disk ${JSON.stringify(spec.disk)} does not exist: local mode installs into an existing disk-image file ` +
        `(create one first, e.g. truncate -s 4G ${spec.disk})`,
    );
  }
  if (spec.diskSelector && files.length > 0) return undefined;
  return "no disk-image file to install to (machine.install.disk is not set)";
}

export async function installCandidates(spec: InstallSpec, d: DiscoveryOptions): Promise<DiskInfo[]> {
  const files = [...(d.files ?? [])];
  if (spec.disk && !spec.disk.startsWith("/dev/") && !files.includes(spec.disk)) {
    if ((await hostFiles.stat(spec.disk).catch(() => undefined))?.isFile()) files.push(spec.disk);
  }
  return discoverDisks({ sysRoot: d.sysRoot, devRoot: d.devRoot, files });
}

export function chooseInstallDisk(candidates: DiskInfo[], spec: InstallSpec, local: boolean): DiskInfo {
  const disk = resolveInstallDisk(candidates, spec);
  if (local && !disk.file) throw failedPrecondition(`local mode installs only into disk-image files; the install disk resolved to a device: ${describeDisk(disk)}`);
  return disk;
}

export interface InstallResult {
  disk: SystemDisk;
  record: UpgradeRecord;
}

export async function installSystem(target: DiskInfo, payload: InstallerPayload, o: { arch: Arch; spec: InstallSpec; report: Reporter }): Promise<InstallResult> {
  let disk: SystemDisk | undefined;
  let record: UpgradeRecord | undefined;
  o.report.say(`installing ${payload.manifest.version} to ${target.devPath}`);
  await o.report.phase("install", [
    [
      "partitionDisk",
      async () => {
        const plan = planLayout(target.size, { arch: o.arch, sectorSize: target.sectorSize });
        await writeLayout(target.devPath, plan, { wipe: o.spec.wipe, systemdBootEfi: payload.efi, grubBios: payload.bios });
        o.report.say(`partitioned ${target.devPath}: ${plan.partitions.map((p) => `${p.label} ${Math.round(p.size / 2 ** 20)} MiB`).join(", ")}`);
        const loaders = [payload.efi ? "systemd-boot (UEFI)" : undefined, payload.bios && plan.arch === "amd64" ? "GRUB (BIOS)" : undefined].filter(Boolean);
        o.report.say(`bootloaders: ${loaders.join(" and ") || "none in the installer image (boot entries only)"}`);
      },
    ],
    [
      "writeSlotA",
      async () => {
        disk = await SystemDisk.open(target.devPath);
        const d = disk;
        await d.esp.mkdir("/A");
        await d.esp.write(`/A/${MANIFEST_NAME}`, Buffer.from(JSON.stringify(payload.manifest, null, 1)));
        record = await d.withCtx((ctx) => installFirstSlot(ctx, toSlotPayload(payload, o.spec.extraKernelArgs)));
        o.report.say(`slot A holds ${payload.manifest.version} and is the last-known-good slot`);
      },
    ],
  ]);
  return { disk: disk!, record: record! };
}
