/**
 * Disk discovery from sysfs, shaped for storage.Disk (the Disks RPC) and Disks.block.talos.dev (DiskSpec).
 * The sysfs and /dev roots are parameters so tests can point them at a fake tree. Attribute sources follow
 * Talos/go-blockdevice: device/{model,serial,modalias}, wwid, queue/rotational, the SCSI host for transport.
 * Disk-image files can be candidates too (local mode installs onto a file).
 */
import { promises as fs, constants as fsc } from "node:fs";
import { basename, resolve } from "node:path";
import { Disk_DiskType } from "../machinery/api/gen/storage/storage_pb.js";

export type DiskKind = "ssd" | "hdd" | "nvme" | "sd" | "cd" | "unknown";

export interface DiskInfo {
  /** Kernel name (sda, vda, nvme0n1) or, for an image file, its base name. */
  id: string;
  /** /dev/<name> or the absolute path of an image file. */
  devPath: string;
  size: number;
  ioSize: number;
  sectorSize: number;
  readonly: boolean;
  cdrom: boolean;
  rotational: boolean;
  model: string;
  serial: string;
  modalias: string;
  wwid: string;
  uuid: string;
  /** /sys/block/<dev>/device/name (MMC/SD cards). */
  name: string;
  firmwareVersion: string;
  busPath: string;
  subsystem: string;
  /** nvme, virtio, mmc, sata, ata, sas, fc, iscsi, usb, ibp, file, or "" (dm/md/loop/zram…). */
  transport: string;
  type: DiskKind;
  secondaryDisks: string[];
  symlinks: string[];
  /** True for a disk-image file candidate. */
  file: boolean;
}

export interface DiscoverOptions {
  sysRoot?: string;
  devRoot?: string;
  /** Image files to offer as candidates alongside the block devices. */
  files?: string[];
}

async function readAttr(path: string): Promise<string> {
  try {
    return (await fs.readFile(path, "utf8")).trim();
  } catch {
    return "";
  }
}

async function exists(path: string): Promise<boolean> {
  return fs.access(path).then(
    () => true,
    () => false,
  );
}

async function realpathOr(path: string): Promise<string | undefined> {
  return fs.realpath(path).catch(() => undefined);
}

/** SCSI VPD page 0x80 (unit serial number): 4-byte header, then the ASCII serial. */
export function parseVpdSerial(buf: Buffer): string {
  if (buf.length < 4 || buf[1] !== 0x80) return "";
  const len = buf.readUInt16BE(2);
  return buf.subarray(4, 4 + len).toString("latin1").replace(/\0/g, "").trim();
}

const isPow2 = (n: number) => n > 0 && (n & (n - 1)) === 0;

async function scsiTransport(sys: string, deviceReal: string): Promise<string> {
  const hctl = basename(deviceReal);
  const m = /^(\d+):\d+:\d+:\d+$/.exec(hctl);
  if (!m) return "";
  const host = `host${m[1]}`;
  if (await exists(`${sys}/class/sas_host/${host}`)) return "sas";
  if (await exists(`${sys}/class/fc_host/${host}`)) return "fc";
  if (await exists(`${sys}/bus/scsi/devices/${hctl}/ieee1394_id`)) return "ibp";
  if (await exists(`${sys}/class/iscsi_host/${host}`)) return "iscsi";
  if (deviceReal.includes("/usb")) return "usb";
  const proc = await readAttr(`${sys}/class/scsi_host/${host}/proc_name`);
  if (proc === "ahci" || proc === "sata") return "sata";
  if (proc.includes("ata")) return "ata";
  if (proc === "virtio_scsi") return "virtio";
  return "";
}

async function transportFor(sys: string, name: string, deviceReal?: string): Promise<string> {
  if (name.startsWith("nvme")) return "nvme";
  if (name.startsWith("vd")) return "virtio";
  if (name.startsWith("mmcblk")) return "mmc";
  return deviceReal ? scsiTransport(sys, deviceReal) : "";
}

function kindFor(d: Pick<DiskInfo, "transport" | "cdrom" | "rotational">): DiskKind {
  if (d.transport === "nvme") return "nvme";
  if (d.transport === "mmc") return "sd";
  if (d.cdrom) return "cd";
  return d.rotational ? "hdd" : "ssd";
}

async function symlinksFor(devRoot: string, name: string): Promise<string[]> {
  const out: string[] = [];
  for (const dir of ["by-id", "by-path", "by-diskseq"]) {
    const base = `${devRoot}/disk/${dir}`;
    const names = await fs.readdir(base).catch(() => [] as string[]);
    for (const n of names) {
      const target = await fs.readlink(`${base}/${n}`).catch(() => "");
      if (basename(target) === name) out.push(`/dev/disk/${dir}/${n}`);
    }
  }
  return out.sort();
}

/** Private LVM volumes (dm uuid "LVM-<vg>-<lv>") are internals of another device, never install targets. */
function isPrivateLvm(dmUuid: string): boolean {
  return /^LVM-.*-/.test(dmUuid);
}

/** Reads one whole-disk device, or undefined for devices that are not disks we list (ram, empty, private dm). */
export async function readBlockDevice(name: string, opts: DiscoverOptions = {}): Promise<DiskInfo | undefined> {
  const sys = opts.sysRoot ?? "/sys";
  const devRoot = opts.devRoot ?? "/dev";
  const base = (await exists(`${sys}/block/${name}`)) ? `${sys}/block/${name}` : `${sys}/class/block/${name}`;
  if (await exists(`${base}/partition`)) return undefined;
  const [major] = (await readAttr(`${base}/dev`)).split(":");
  if (major === "1") return undefined; // ram disks
  if (isPrivateLvm(await readAttr(`${base}/dm/uuid`))) return undefined;

  const cdrom = /^sr\d+$/.test(name) || (await readAttr(`${base}/device/type`)) === "5";
  const size = Number(await readAttr(`${base}/size`)) * 512 || 0; // always 512-byte units
  if (size === 0 && !cdrom) return undefined;

  const sysReal = (await realpathOr(sys)) ?? sys;
  const devReal = await realpathOr(base);
  const deviceReal = await realpathOr(`${base}/device`);
  let busPath = "";
  if (devReal) {
    const idx = devReal.indexOf("/devices/");
    // drop ".../block/<name>" to get the bus path of the controller-side device (as Talos does)
    if (idx >= 0) busPath = devReal.slice(idx + "/devices".length).split("/").slice(0, -2).join("/");
  }
  const subsystemReal = await realpathOr(`${base}/subsystem`);
  const subsystem = subsystemReal ? subsystemReal.replace(sysReal, "/sys") : "";

  const optIo = Number(await readAttr(`${base}/queue/optimal_io_size`));
  const minIo = Number(await readAttr(`${base}/queue/minimum_io_size`));
  const ioSize = isPow2(optIo) ? optIo : isPow2(minIo) ? minIo : 512;
  const logical = Number(await readAttr(`${base}/queue/logical_block_size`));

  let serial = (await readAttr(`${base}/device/serial`)) || (await readAttr(`${base}/serial`));
  if (!serial) serial = parseVpdSerial(await fs.readFile(`${base}/device/vpd_pg80`).catch(() => Buffer.alloc(0)));

  const rotational = (await readAttr(`${base}/queue/rotational`)) === "1";
  const transport = await transportFor(sys, name, deviceReal);
  const d: DiskInfo = {
    id: name,
    devPath: `/dev/${name}`,
    size,
    ioSize,
    sectorSize: isPow2(logical) ? logical : 512,
    readonly: (await readAttr(`${base}/ro`)) === "1",
    cdrom,
    rotational,
    model: await readAttr(`${base}/device/model`),
    serial,
    modalias: await readAttr(`${base}/device/modalias`),
    wwid: (await readAttr(`${base}/wwid`)) || (await readAttr(`${base}/device/wwid`)),
    uuid: (await readAttr(`${base}/uuid`)) || (await readAttr(`${base}/device/uuid`)),
    name: await readAttr(`${base}/device/name`),
    firmwareVersion: (await readAttr(`${base}/device/firmware_rev`)) || (await readAttr(`${base}/device/rev`)),
    busPath,
    subsystem,
    transport,
    type: "unknown",
    secondaryDisks: (await fs.readdir(`${base}/slaves`).catch(() => [] as string[])).sort(),
    symlinks: await symlinksFor(devRoot, name),
    file: false,
  };
  d.type = kindFor(d);
  return d;
}

/** A disk-image file as an install candidate. */
export async function diskFromFile(path: string): Promise<DiskInfo> {
  const abs = resolve(path);
  const st = await fs.stat(abs);
  if (!st.isFile()) throw new Error(`${abs} is not a regular file`);
  const writable = await fs.access(abs, fsc.W_OK).then(
    () => true,
    () => false,
  );
  return {
    id: basename(abs),
    devPath: abs,
    size: st.size,
    ioSize: 512,
    sectorSize: 512,
    readonly: !writable,
    cdrom: false,
    rotational: false,
    model: "disk image file",
    serial: "",
    modalias: "",
    wwid: "",
    uuid: "",
    name: basename(abs),
    firmwareVersion: "",
    busPath: "",
    subsystem: "",
    transport: "file",
    type: "ssd",
    secondaryDisks: [],
    symlinks: [],
    file: true,
  };
}

export async function discoverDisks(opts: DiscoverOptions = {}): Promise<DiskInfo[]> {
  const sys = opts.sysRoot ?? "/sys";
  let names = await fs.readdir(`${sys}/block`).catch(() => undefined);
  if (!names) names = await fs.readdir(`${sys}/class/block`).catch(() => [] as string[]);
  const disks: DiskInfo[] = [];
  for (const name of names.sort()) {
    const d = await readBlockDevice(name, opts);
    if (d) disks.push(d);
  }
  for (const f of opts.files ?? []) disks.push(await diskFromFile(f));
  return disks;
}

const TYPE_CODES: Record<DiskKind, Disk_DiskType> = {
  ssd: Disk_DiskType.SSD,
  hdd: Disk_DiskType.HDD,
  nvme: Disk_DiskType.NVME,
  sd: Disk_DiskType.SD,
  cd: Disk_DiskType.CD,
  unknown: Disk_DiskType.UNKNOWN,
};

/** Field values for storage.Disk (wrap with create(DiskSchema, …) at the API edge). */
export function storageDiskFields(d: DiskInfo, systemDisk = false) {
  return {
    size: BigInt(d.size),
    model: d.model,
    deviceName: d.devPath,
    name: d.name,
    serial: d.serial,
    modalias: d.modalias,
    uuid: d.uuid,
    wwid: d.wwid,
    type: TYPE_CODES[d.type],
    busPath: d.busPath,
    systemDisk,
    subsystem: d.subsystem,
    readonly: d.readonly,
  };
}

/** Decimal units formatted like Talos's pretty_size (go-humanize Bytes): "11 GB", "4.3 GB", "512 B". */
export function prettySize(bytes: number): string {
  if (bytes < 10) return `${bytes} B`;
  const units = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
  const e = Math.min(Math.floor(Math.log(bytes) / Math.log(1000)), units.length - 1);
  const val = Math.floor((bytes / 1000 ** e) * 10 + 0.5) / 10;
  return `${val < 10 ? val.toFixed(1) : val.toFixed(0)} ${units[e]}`;
}

/** Field values for the DiskSpec of Disks.block.talos.dev (snake_case YAML keys are applied by the resource layer). */
export function diskSpecFields(d: DiskInfo) {
  return {
    devPath: d.devPath,
    size: d.size,
    prettySize: prettySize(d.size),
    ioSize: d.ioSize,
    sectorSize: d.sectorSize,
    readonly: d.readonly,
    cdrom: d.cdrom,
    model: d.model,
    firmwareVersion: d.firmwareVersion,
    serial: d.serial,
    modalias: d.modalias,
    wwid: d.wwid,
    uuid: d.uuid,
    busPath: d.busPath,
    subSystem: d.subsystem,
    transport: d.transport,
    rotational: d.rotational,
    secondaryDisks: d.secondaryDisks,
    symlinks: d.symlinks,
  };
}
