import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdir, mkdtemp, rm, symlink, writeFile, truncate } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { diskFromFile, discoverDisks, diskSpecFields, parseVpdSerial, prettySize, storageDiskFields, type DiskInfo } from "../../src/host/disks.js";
import { Disk_DiskType } from "../../src/machinery/api/gen/storage/storage_pb.js";

/** A fake sysfs with the shapes the kernel really uses (symlinks into /sys/devices). */
class FakeSys {
  constructor(readonly root: string) {}
  async file(rel: string, content: string | Buffer) {
    const p = join(this.root, rel);
    await mkdir(dirname(p), { recursive: true });
    await writeFile(p, content);
  }
  async link(rel: string, targetRel: string) {
    const p = join(this.root, rel);
    await mkdir(dirname(p), { recursive: true });
    await mkdir(join(this.root, targetRel), { recursive: true });
    await symlink(relative(dirname(p), join(this.root, targetRel)), p);
  }
  /** nvme namespaces sit directly under the controller; SCSI/virtio disks under ".../block/<name>". */
  async disk(name: string, devDir: string, attrs: Record<string, string | Buffer>, deviceRel?: string, viaBlockDir = true) {
    const base = viaBlockDir ? `devices/${devDir}/block/${name}` : `devices/${devDir}/${name}`;
    await mkdir(join(this.root, base), { recursive: true });
    for (const [k, v] of Object.entries(attrs)) await this.file(`${base}/${k}`, v);
    await this.link(`block/${name}`, base);
    await this.link(`${base}/subsystem`, "class/block");
    if (deviceRel) await this.link(`${base}/device`, deviceRel);
  }
}

const q = (rot: string, extra: Record<string, string> = {}) => ({
  "queue/rotational": rot,
  "queue/logical_block_size": "512",
  "queue/optimal_io_size": "0",
  "queue/minimum_io_size": "4096",
  ...extra,
});

function vpd80(serial: string): Buffer {
  const b = Buffer.alloc(4 + serial.length);
  b[1] = 0x80;
  b.writeUInt16BE(serial.length, 2);
  b.write(serial, 4, "latin1");
  return b;
}

describe("disk discovery from a fake sysfs", () => {
  let root: string;
  let disks: DiskInfo[];
  const byId = (id: string) => disks.find((d) => d.id === id)!;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "machined-sysfs-"));
    const s = new FakeSys(join(root, "sys"));
    const sata = "pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0";
    await s.file(`devices/${sata}/model`, "QEMU HARDDISK   \n");
    await s.file(`devices/${sata}/modalias`, "scsi:t-0x00\n");
    await s.file(`devices/${sata}/rev`, "2.5+\n");
    await s.file(`devices/${sata}/vpd_pg80`, vpd80("QM00001 "));
    await s.file(`devices/${sata}/type`, "0\n");
    await s.disk("sda", sata, { size: "20971520\n", ro: "0\n", dev: "8:0\n", wwid: "t10.ATA QEMU HARDDISK QM00001\n", ...q("1") }, `devices/${sata}`);
    await s.file("class/scsi_host/host0/proc_name", "ahci\n");

    const usb = "pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0";
    await s.file(`devices/${usb}/model`, "Flash Disk\n");
    await s.file(`devices/${usb}/type`, "0\n");
    await s.disk("sdb", usb, { size: "15728640", ro: "0", dev: "8:16", ...q("1") }, `devices/${usb}`);
    await s.file("class/scsi_host/host6/proc_name", "usb-storage\n");

    const cd = "pci0000:00/0000:00:1f.2/ata2/host1/target1:0:0/1:0:0:0";
    await s.file(`devices/${cd}/type`, "5\n");
    await s.file(`devices/${cd}/model`, "QEMU DVD-ROM\n");
    await s.disk("sr0", cd, { size: "2097152", ro: "1", dev: "11:0", ...q("1") }, `devices/${cd}`);
    await s.file("class/scsi_host/host1/proc_name", "ahci\n");

    const nvme = "pci0000:00/0000:00:04.0/nvme/nvme0";
    await s.file(`devices/${nvme}/model`, "Samsung SSD 980\n");
    await s.file(`devices/${nvme}/serial`, "S64DNX0R123456\n");
    await s.file(`devices/${nvme}/firmware_rev`, "1B4QFXO7\n");
    await s.file(`devices/${nvme}/modalias`, "nvme:t\n");
    await s.disk("nvme0n1", `${nvme}`, { size: "1953525168", ro: "0", dev: "259:0", wwid: "eui.0025388b21b1d1a2", uuid: "6f8b1c2a-0000-0000-0000-000000000001", ...q("0", { "queue/optimal_io_size": "131072", "queue/logical_block_size": "4096" }) }, `devices/${nvme}`, false);

    await s.disk("vda", "pci0000:00/0000:00:05.0/virtio2", { size: "8388608", ro: "0", dev: "252:0", serial: "vd-serial-1", ...q("1") }, "devices/pci0000:00/0000:00:05.0/virtio2");
    await s.file("devices/pci0000:00/0000:00:05.0/virtio2/modalias", "virtio:d00000002v00001AF4\n");

    await s.disk("mmcblk0", "platform/fe340000.mmc/mmc_host/mmc0/mmc0:aaaa", { size: "62333952", ro: "0", dev: "179:0", ...q("0") }, "devices/platform/fe340000.mmc/mmc_host/mmc0/mmc0:aaaa");
    await s.file("devices/platform/fe340000.mmc/mmc_host/mmc0/mmc0:aaaa/name", "SD32G\n");

    await s.disk("loop0", "virtual", { size: "204800", ro: "0", dev: "7:0", ...q("0") });
    await s.disk("ram0", "virtual", { size: "8192", ro: "0", dev: "1:0", ...q("0") });
    await s.disk("dm-0", "virtual", { size: "204800", ro: "0", dev: "253:0", "dm/uuid": "LVM-vgid-lvid", ...q("0") });
    await s.disk("dm-1", "virtual", { size: "204800", ro: "0", dev: "253:1", "dm/uuid": "CRYPT-LUKS2-abc", ...q("0") });
    await mkdir(join(root, "sys/devices/virtual/block/dm-1/slaves/vda"), { recursive: true });
    await s.disk("sdd", "pci0000:00/0000:00:1f.2/ata3/host2/target2:0:0/2:0:0:0", { size: "0", ro: "0", dev: "8:48", ...q("1") });

    await mkdir(join(root, "dev/disk/by-id"), { recursive: true });
    await symlink("../../sda", join(root, "dev/disk/by-id/ata-QEMU_HARDDISK_QM00001"));
    await symlink("../../nvme0n1", join(root, "dev/disk/by-id/nvme-Samsung_SSD_980_S64DNX0R123456"));

    disks = await discoverDisks({ sysRoot: join(root, "sys"), devRoot: join(root, "dev") });
  });
  afterAll(async () => rm(root, { recursive: true, force: true }));

  it("lists whole disks and skips ram, private LVM and empty devices", () => {
    expect(disks.map((d) => d.id)).toEqual(["dm-1", "loop0", "mmcblk0", "nvme0n1", "sda", "sdb", "sr0", "vda"]);
  });

  it("reads a SATA disk like Talos does", () => {
    expect(byId("sda")).toMatchObject({
      devPath: "/dev/sda",
      size: 20971520 * 512,
      model: "QEMU HARDDISK",
      serial: "QM00001", // from VPD page 0x80 when there is no serial attribute
      modalias: "scsi:t-0x00",
      wwid: "t10.ATA QEMU HARDDISK QM00001",
      firmwareVersion: "2.5+",
      busPath: "/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0",
      subsystem: "/sys/class/block",
      transport: "sata",
      rotational: true,
      type: "hdd",
      readonly: false,
      cdrom: false,
      ioSize: 4096,
      sectorSize: 512,
      symlinks: ["/dev/disk/by-id/ata-QEMU_HARDDISK_QM00001"],
    });
  });

  it("derives transport and type for nvme, virtio, usb, mmc, cdrom and virtual devices", () => {
    expect(byId("nvme0n1")).toMatchObject({ transport: "nvme", type: "nvme", serial: "S64DNX0R123456", uuid: "6f8b1c2a-0000-0000-0000-000000000001", ioSize: 131072, sectorSize: 4096, busPath: "/pci0000:00/0000:00:04.0/nvme" });
    expect(byId("vda")).toMatchObject({ transport: "virtio", type: "hdd", serial: "vd-serial-1", modalias: "virtio:d00000002v00001AF4" });
    expect(byId("sdb")).toMatchObject({ transport: "usb", model: "Flash Disk" });
    expect(byId("mmcblk0")).toMatchObject({ transport: "mmc", type: "sd", name: "SD32G" });
    expect(byId("sr0")).toMatchObject({ cdrom: true, readonly: true, type: "cd" });
    expect(byId("loop0")).toMatchObject({ transport: "", busPath: "/virtual" });
    expect(byId("dm-1").secondaryDisks).toEqual(["vda"]);
  });

  it("maps to storage.Disk and DiskSpec fields", () => {
    expect(storageDiskFields(byId("nvme0n1"), true)).toMatchObject({ size: 1953525168n * 512n, deviceName: "/dev/nvme0n1", type: Disk_DiskType.NVME, systemDisk: true });
    expect(storageDiskFields(byId("sr0")).type).toBe(Disk_DiskType.CD);
    expect(diskSpecFields(byId("sda"))).toMatchObject({ devPath: "/dev/sda", prettySize: "11 GB", subSystem: "/sys/class/block", transport: "sata" });
  });

  it("offers image files as candidates", async () => {
    const f = join(root, "disk.img");
    await writeFile(f, "");
    await truncate(f, 4 * 1024 ** 3);
    const d = await diskFromFile(f);
    expect(d).toMatchObject({ id: "disk.img", devPath: f, size: 4 * 1024 ** 3, transport: "file", file: true, readonly: false });
    const all = await discoverDisks({ sysRoot: join(root, "sys"), devRoot: join(root, "dev"), files: [f] });
    expect(all.at(-1)?.devPath).toBe(f);
  });
});

describe("small parsers", () => {
  it("parses VPD page 0x80 and formats sizes like go-humanize", () => {
    expect(parseVpdSerial(vpd80("  ABC123  "))).toBe("ABC123");
    expect(parseVpdSerial(Buffer.from([0, 0x83, 0, 1, 65]))).toBe("");
    expect(prettySize(512)).toBe("512 B");
    expect(prettySize(4 * 1024 ** 3)).toBe("4.3 GB");
    expect(prettySize(1953525168 * 512)).toBe("1.0 TB");
    expect(prettySize(5)).toBe("5 B");
  });
});
