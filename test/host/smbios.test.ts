/**
 * SMBIOS decoding on tables built here byte by byte after DSP0134 (header, formatted area, string set), since
 * this host exports none: type 0 BIOS, type 1 system (UUID byte order by version), type 4 processor, type 17
 * memory device (plain, KiB-unit and extended sizes), and the type-127 end marker.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { decodeSmbios, formatUuid, parseStructures, readMachineIdUuid, readSmbios } from "../../src/host/smbios.js";

/** One structure: formatted area (type, length, handle, then `body`) and its strings. */
function structure(type: number, handle: number, body: number[], strings: string[]): Buffer {
  const head = Buffer.from([type, 4 + body.length, handle & 0xff, handle >> 8, ...body]);
  const set = strings.length ? Buffer.concat([...strings.map((s) => Buffer.from(`${s}\0`, "latin1")), Buffer.from([0])]) : Buffer.from([0, 0]);
  return Buffer.concat([head, set]);
}

const le16 = (n: number) => [n & 0xff, n >> 8];
const le32 = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, n >>> 24];
const UUID_BYTES = [0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff];

function table(): Buffer {
  // type 0: vendor(1) version(2) ... (offsets 4 and 5 are string indexes)
  const bios = structure(0, 0, [1, 2, 0, 0, 3, 0], ["SeaBIOS", "1.16.3-debian", "04/01/2014"]);
  // type 1: manufacturer 1, product 2, version 3, serial 4, UUID, wake-up 6 (power switch), SKU 5, family 0
  const sys = structure(1, 0x100, [1, 2, 3, 4, ...UUID_BYTES, 6, 5, 0], ["QEMU", "Standard PC (Q35 + ICH9, 2009)", "pc-q35-8.2", "SN-42", "SKU-7"]);
  // type 4, offsets 4..37 (body offset = field offset - 4)
  const cpu = new Array(34).fill(0);
  cpu[0] = 1; // socket designation
  cpu[3] = 2; // manufacturer
  cpu[12] = 3; // version
  [cpu[16], cpu[17]] = le16(2000); // max speed
  [cpu[18], cpu[19]] = le16(1800); // current speed
  cpu[20] = 0x41; // status: populated, enabled
  cpu[28] = 4; // serial
  cpu[31] = 8; // core count
  cpu[32] = 8; // core enabled
  cpu[33] = 16; // thread count
  const proc = structure(4, 0x400, cpu, ["CPU 0", "QEMU", "pc-q35-8.2 CPU", "CPU-SN"]);
  const mem = (size: number, ext: number, locator: string, bank: string) => {
    const b = new Array(24 + 4).fill(0);
    [b[8], b[9]] = le16(size);
    b[12] = 1; // device locator
    b[13] = bank ? 2 : 0;
    [b[17], b[18]] = le16(4800); // speed
    b[19] = bank ? 3 : 2; // manufacturer
    b[22] = bank ? 4 : 3; // part number
    [b[24], b[25], b[26], b[27]] = le32(ext);
    return structure(17, 0x1100, b, bank ? [locator, bank, "Samsung", "M321R8GA0BB0"] : [locator, "QEMU", "RAM-1"]);
  };
  return Buffer.concat([bios, sys, proc, mem(16384, 0, "DIMM 0", "P0 CHANNEL A"), mem(0x8000 | 512, 0, "DIMM 1", ""), mem(0x7fff, 65536, "DIMM 2", ""), structure(127, 0xfeff, [], [])]);
}

const entry = (major: number, minor: number) => Buffer.from([0x5f, 0x53, 0x4d, 0x5f, 0, 0x1f, major, minor]);

describe("SMBIOS", () => {
  it("splits structures and their string sets, stopping at the end marker", () => {
    const s = parseStructures(Buffer.concat([table(), structure(1, 9, [], ["after the end"])]));
    expect(s.map((x) => x.type)).toEqual([0, 1, 4, 17, 17, 17, 127]);
    expect(s[0].strings).toEqual(["SeaBIOS", "1.16.3-debian", "04/01/2014"]);
  });

  it("decodes BIOS, system, processor and memory devices", () => {
    const d = decodeSmbios(entry(2, 8), table());
    expect(d.version).toBe("2.8");
    expect(d.biosVersion).toBe("1.16.3-debian");
    expect(d.system).toEqual({
      manufacturer: "QEMU",
      productName: "Standard PC (Q35 + ICH9, 2009)",
      version: "pc-q35-8.2",
      serialNumber: "SN-42",
      uuid: "00112233-4455-6677-8899-aabbccddeeff",
      wakeUpType: "Power Switch",
      skuNumber: "SKU-7",
    });
    expect(d.processors).toEqual([
      {
        socketDesignation: "CPU 0", manufacturer: "QEMU", version: "pc-q35-8.2 CPU", maxSpeedMhz: 2000, currentSpeedMhz: 1800, status: 0x41,
        serialNumber: "CPU-SN", assetTag: "", partNumber: "", coreCount: 8, coreEnabled: 8, threadCount: 16,
      },
    ]);
    expect(d.memoryDevices.map((m) => [m.deviceLocator, m.bankLocator, m.sizeMiB, m.manufacturer, m.partNumber, m.speed])).toEqual([
      ["DIMM 0", "P0 CHANNEL A", 16384, "Samsung", "M321R8GA0BB0", 4800],
      ["DIMM 1", "", 0, "QEMU", "RAM-1", 4800], // 512 KiB rounds down to 0 MiB
      ["DIMM 2", "", 65536, "QEMU", "RAM-1", 4800], // extended size field
    ]);
  });

  it("keeps the UUID's byte order before SMBIOS 2.6, and has none for all-zero or all-FF bytes", () => {
    expect(decodeSmbios(entry(2, 4), table()).system?.uuid).toBe("33221100-5544-7766-8899-aabbccddeeff");
    expect(formatUuid(Buffer.alloc(16), true)).toBe("");
    expect(formatUuid(Buffer.alloc(16, 0xff), true)).toBe("");
  });

  it("reads the kernel's files under a root, and nothing where there are none", async () => {
    const root = await mkdtemp(join(tmpdir(), "machined-smbios-"));
    try {
      expect(await readSmbios(root)).toBeUndefined();
      const dir = join(root, "sys/firmware/dmi/tables");
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, "smbios_entry_point"), entry(3, 0));
      await writeFile(join(dir, "DMI"), table());
      expect((await readSmbios(root))?.system?.uuid).toBe("00112233-4455-6677-8899-aabbccddeeff");
      expect(await readMachineIdUuid(root)).toBeUndefined();
      await mkdir(join(root, "etc"));
      await writeFile(join(root, "etc/machine-id"), "3d1219c7c4c5404aaa1f6d2a48adfda4\n");
      expect(await readMachineIdUuid(root)).toBe("3d1219c7-c4c5-404a-aa1f-6d2a48adfda4");
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
