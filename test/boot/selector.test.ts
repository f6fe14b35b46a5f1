import { describe, expect, it } from "vitest";
import type { DiskInfo } from "../../src/host/disks.js";
import { ApiError, Code } from "../../src/machinery/errors.js";
import { globMatch, mismatchReasons, parseBytes, parseSizeMatcher, resolveInstallDisk, selectInstallDisk } from "../../src/boot/selector.js";

const GB = 1e9;

function disk(over: Partial<DiskInfo>): DiskInfo {
  return {
    id: "sda",
    devPath: "/dev/sda",
    size: 100 * GB,
    ioSize: 512,
    sectorSize: 512,
    readonly: false,
    cdrom: false,
    rotational: false,
    model: "",
    serial: "",
    modalias: "",
    wwid: "",
    uuid: "",
    name: "",
    firmwareVersion: "",
    busPath: "",
    subsystem: "/sys/class/block",
    transport: "sata",
    type: "ssd",
    secondaryDisks: [],
    symlinks: [],
    file: false,
    ...over,
  };
}

const candidates: DiskInfo[] = [
  disk({ id: "sda", devPath: "/dev/sda", size: 480 * GB, model: "Samsung SSD 860", serial: "S3Z1", busPath: "/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0", modalias: "scsi:t-0x00", wwid: "naa.5002538e4", symlinks: ["/dev/disk/by-id/ata-Samsung_SSD_860_S3Z1"] }),
  disk({ id: "sdb", devPath: "/dev/sdb", size: 4000 * GB, model: "WDC WD40EFRX", serial: "WD-1", rotational: true, type: "hdd", busPath: "/pci0000:00/0000:00:17.0/ata2/host1/target1:0:0/1:0:0:0" }),
  disk({ id: "nvme0n1", devPath: "/dev/nvme0n1", size: 1000 * GB, model: "Samsung SSD 980", transport: "nvme", type: "nvme", uuid: "0000-0001-abcd", busPath: "/pci0000:00/0000:00:04.0/nvme" }),
  disk({ id: "sr0", devPath: "/dev/sr0", size: 1 * GB, cdrom: true, readonly: true, type: "cd", model: "DVD-ROM" }),
  disk({ id: "loop0", devPath: "/dev/loop0", size: 200 * GB, transport: "" }),
  disk({ id: "mmcblk0", devPath: "/dev/mmcblk0", size: 32 * GB, transport: "mmc", type: "sd", name: "SD32G" }),
];

describe("size matcher (upstream InstallDiskSizeMatcher + go-humanize units)", () => {
  it("parses operators and units", () => {
    expect(parseSizeMatcher(">= 100GB")).toEqual({ op: ">=", bytes: 100e9, text: ">= 100GB" });
    expect(parseSizeMatcher("<=2TB")).toMatchObject({ op: "<=", bytes: 2e12 });
    expect(parseSizeMatcher("4GB")).toMatchObject({ op: "==", bytes: 4e9 });
    expect(parseSizeMatcher(" > 1.5 TiB ")).toMatchObject({ op: ">", bytes: 1.5 * 2 ** 40 });
    expect(parseBytes("1,000 kb")).toBe(1e6);
    expect(parseBytes("512")).toBe(512);
    expect(parseBytes("8Gi")).toBe(8 * 2 ** 30);
    expect(() => parseBytes("lots")).toThrow(/invalid size/);
    expect(() => parseBytes("10 XB")).toThrow(/unknown unit "xb"/);
  });
});

describe("glob (only * is special, as ryanuber/go-glob)", () => {
  it.each([
    ["Samsung*", "Samsung SSD 860", true],
    ["*SSD*", "Samsung SSD 860", true],
    ["*860", "Samsung SSD 860", true],
    ["Samsung", "Samsung SSD 860", false],
    ["*", "", true],
    ["S?msung*", "Samsung", false],
    ["/pci0000:00/*", "/pci0000:00/0000:00:17.0/ata1", true],
    ["a*b*c", "aXbYc", true],
    ["a*b*c", "aXcYb", false],
  ])("%s ~ %s → %s", (p, s, want) => expect(globMatch(p, s)).toBe(want));
});

describe("selectInstallDisk", () => {
  it("selects by every field", () => {
    expect(selectInstallDisk(candidates, { size: ">= 1TB", type: "hdd" }).id).toBe("sdb");
    expect(selectInstallDisk(candidates, { type: "nvme" }).id).toBe("nvme0n1");
    expect(selectInstallDisk(candidates, { type: "sd" }).id).toBe("mmcblk0");
    expect(selectInstallDisk(candidates, { model: "Samsung SSD 8*" }).id).toBe("sda");
    expect(selectInstallDisk(candidates, { serial: "WD-*" }).id).toBe("sdb");
    expect(selectInstallDisk(candidates, { uuid: "0000-0001-*" }).id).toBe("nvme0n1");
    expect(selectInstallDisk(candidates, { wwid: "naa.*" }).id).toBe("sda");
    expect(selectInstallDisk(candidates, { modalias: "scsi:*" }).id).toBe("sda");
    expect(selectInstallDisk(candidates, { busPath: "/pci0000:00/0000:00:17.0/ata2/*" }).id).toBe("sdb");
    expect(selectInstallDisk(candidates, { name: "SD32G" }).id).toBe("mmcblk0");
    expect(selectInstallDisk(candidates, { size: "<= 500GB", type: "ssd", model: "Samsung*" }).id).toBe("sda");
  });

  it("never picks read-only, CD-ROM or transport-less devices", () => {
    expect(mismatchReasons(candidates[3], {})).toEqual(["read-only disks are never chosen", "CD-ROM drives are never chosen"]);
    expect(mismatchReasons(candidates[4], {})[0]).toMatch(/no transport/);
    expect(() => selectInstallDisk(candidates, { size: "200GB" })).toThrow(/no disk matches/);
  });

  it("lists every candidate with attributes and reasons when nothing matches", () => {
    let err: unknown;
    try {
      selectInstallDisk(candidates, { size: ">= 10TB" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe(Code.FailedPrecondition);
    const msg = (err as ApiError).message;
    expect(msg).toMatch(/^no disk matches machine\.install\.diskSelector \{size: ">= 10TB"\}\. Candidates:/);
    for (const d of candidates) expect(msg).toContain(`- ${d.devPath}: size`);
    expect(msg).toContain(`model "Samsung SSD 860", serial "S3Z1", wwid "naa.5002538e4"`);
    expect(msg).toContain("size 480000000000 bytes is not >= 10000000000000 bytes (>= 10TB)");
    expect(msg).toMatch(/\/dev\/sr0: .*\n\s+not chosen: read-only disks are never chosen; CD-ROM drives are never chosen; size/);
  });

  it("lists candidates and marks the matches when more than one disk matches", () => {
    expect(() => selectInstallDisk(candidates, { model: "Samsung*" })).toThrow(/2 disks match .*make it specific enough[\s\S]*\/dev\/sda: [^\n]*\n\s+MATCHES[\s\S]*\/dev\/nvme0n1: [^\n]*\n\s+MATCHES/);
  });

  it("rejects selectors that can never be evaluated", () => {
    expect(() => selectInstallDisk(candidates, { type: "floppy" })).toThrow(/unsupported disk type "floppy"/);
    expect(() => selectInstallDisk(candidates, { size: ">= big" })).toThrow(/invalid size/);
  });
});

describe("resolveInstallDisk", () => {
  it("prefers machine.install.disk, accepting /dev paths, kernel names and by-id links", () => {
    expect(resolveInstallDisk(candidates, { disk: "/dev/sdb", diskSelector: { type: "nvme" } }).id).toBe("sdb");
    expect(resolveInstallDisk(candidates, { disk: "nvme0n1" }).id).toBe("nvme0n1");
    expect(resolveInstallDisk(candidates, { disk: "/dev/disk/by-id/ata-Samsung_SSD_860_S3Z1" }).id).toBe("sda");
  });

  it("explains a disk that is not there or not usable", () => {
    expect(() => resolveInstallDisk(candidates, { disk: "/dev/sdz" })).toThrow(/"\/dev\/sdz" is not among the disks found\. Candidates:[\s\S]*\/dev\/mmcblk0/);
    expect(() => resolveInstallDisk(candidates, { disk: "/dev/sr0" })).toThrow(/is read-only and a CD-ROM/);
    expect(() => resolveInstallDisk(candidates, {})).toThrow(/neither machine\.install\.disk nor machine\.install\.diskSelector/);
  });

  it("accepts an image file candidate by path (local mode)", () => {
    const file = disk({ id: "disk.img", devPath: "/var/lib/machined/disk.img", transport: "file", file: true });
    expect(resolveInstallDisk([...candidates, file], { disk: "/var/lib/machined/disk.img" })).toBe(file);
    expect(selectInstallDisk([file, candidates[3]], { size: "100GB" })).toBe(file);
  });
});
