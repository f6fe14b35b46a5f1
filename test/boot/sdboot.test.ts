import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { DirEsp } from "../../src/boot/esp-dir.js";
import { MtoolsEsp } from "../../src/boot/esp-mtools.js";
import type { EspFs } from "../../src/boot/esp.js";
import {
  blessSlot,
  decideBoot,
  formatEntry,
  listSlotEntries,
  markSlotBad,
  modelEntries,
  parseEntry,
  parseEntryName,
  readEspEntries,
  simulateSdBoot,
  writeLoaderConf,
  writeSlotEntry,
  type EntrySpec,
} from "../../src/boot/sdboot.js";
import { compareVersions } from "../../src/boot/version-compare.js";
import { runTool as run } from "../../src/boot/tools.js";
import { missingTools, tempDir } from "./helpers.js";

const noMtools = (await missingTools("sd-boot on a FAT image", ["mkfs.vfat", "mcopy"])).length > 0;

describe("version ordering (UAPI / sd-boot)", () => {
  it.each([
    ["2", "1", 1],
    ["10", "9", 1],
    ["1.10", "1.2", 1],
    ["1.0", "1", 1],
    ["1", "1~rc1", 1],
    ["1.1-1", "1-2", 1],
    ["1a", "1", 1],
    ["b", "a", 1],
    ["0010", "10", 0],
    ["1_2", "1.2", 1], // "_" is ignored; a missing "." at the same place sorts newer
    ["1", undefined, 1],
    ["", "0", -1],
  ])("%s vs %s → %i", (a, b, want) => {
    expect(compareVersions(a, b)).toBe(want);
    expect(compareVersions(b, a)).toBe(-want || 0);
  });
});

describe("entry file names (boot counters)", () => {
  it("parses counters the way sd-boot does", () => {
    expect(parseEntryName("a+3.conf")).toEqual({ stem: "a", counter: { left: 3, done: 0 } });
    expect(parseEntryName("a+2-1.conf")).toEqual({ stem: "a", counter: { left: 2, done: 1 } });
    expect(parseEntryName("a.conf")).toEqual({ stem: "a" });
    expect(parseEntryName("foo+1+2.conf")).toEqual({ stem: "foo+1", counter: { left: 2, done: 0 } });
    expect(parseEntryName("a+x.conf")).toEqual({ stem: "a+x" });
    expect(parseEntryName("a+3-1x.conf")).toEqual({ stem: "a+3-1x" });
    expect(parseEntryName("a+3.conf.tmp")).toBeUndefined();
  });

  it("formats and parses entries", () => {
    const spec: EntrySpec = { slot: "B", generation: 7, osVersion: "v1.2.3", linux: "/B/vmlinuz", initrd: ["/B/initramfs.img"], options: "console=ttyS0 machined.slot=B" };
    const p = parseEntry(formatEntry(spec));
    expect(p).toMatchObject({ sortKey: "machined", version: "7", linux: "/B/vmlinuz", initrd: ["/B/initramfs.img"], options: "console=ttyS0 machined.slot=B", meta: { slot: "B", generation: "7", os: "v1.2.3" } });
  });
});

describe("sd-boot selection model", () => {
  const entry = (fileName: string, version: string, extra = "") => ({ fileName, content: `sort-key machined\nversion ${version}\nlinux /${fileName[0].toUpperCase()}/vmlinuz\n${extra}` });
  const all = () => true;

  it("boots the newest entry with tries left and counts it down before booting", () => {
    const d = decideBoot(modelEntries([entry("b.conf", "1"), entry("a+3.conf", "2")], all))!;
    expect(d.entry.fileName).toBe("a+3.conf");
    expect(d.renameTo).toBe("a+2-1.conf");
    expect(decideBoot(modelEntries([entry("b.conf", "1"), entry("a+1-2.conf", "2")], all))!.renameTo).toBe("a+0-3.conf");
  });

  it("sorts exhausted (+0) entries last so the older good entry boots", () => {
    const d = decideBoot(modelEntries([entry("a+0-3.conf", "2"), entry("b.conf", "1")], all))!;
    expect(d.entry.fileName).toBe("b.conf");
    expect(d.renameTo).toBeUndefined();
    expect(d.order.map((e) => e.fileName)).toEqual(["b.conf", "a+0-3.conf"]);
  });

  it("still boots a bad entry when it is the only one (and keeps counting tries done)", () => {
    expect(decideBoot(modelEntries([entry("a+0-3.conf", "2")], all))!.renameTo).toBe("a+0-4.conf");
  });

  it("drops entries whose kernel is missing without touching their counter", () => {
    const d = decideBoot(modelEntries([entry("a+3.conf", "2"), entry("b.conf", "1")], (p) => p !== "/A/vmlinuz"))!;
    expect(d.entry.fileName).toBe("b.conf");
    expect(d.order).toHaveLength(1);
  });

  it("puts entries with a sort-key before entries without one, and orders by version numerically", () => {
    const order = decideBoot(
      modelEntries([{ fileName: "z.conf", content: "linux /Z/vmlinuz\n" }, entry("a.conf", "9"), entry("b.conf", "10")], all),
    )!.order.map((e) => e.fileName);
    expect(order).toEqual(["b.conf", "a.conf", "z.conf"]);
  });
});

function espSuite(name: string, make: (dir: string) => Promise<EspFs>, skip = false) {
  describe.skipIf(skip)(`slot entries on ${name}`, () => {
    let dir: string;
    let cleanup: () => Promise<void>;
    let esp: EspFs;
    beforeAll(async () => {
      ({ dir, cleanup } = await tempDir());
      esp = await make(dir);
      await writeLoaderConf(esp);
      for (const s of ["A", "B"]) {
        await esp.mkdir(`/${s}`);
        await esp.write(`/${s}/vmlinuz`, Buffer.from(`kernel ${s}`));
      }
    });
    afterAll(async () => cleanup());

    const spec = (slot: "A" | "B", generation: number): EntrySpec => ({ slot, generation, osVersion: `v${generation}`, linux: `/${slot}/vmlinuz`, initrd: [], options: `machined.slot=${slot}` });

    it("stages with a counter, falls back after the tries are spent, and blesses", async () => {
      await writeSlotEntry(esp, spec("B", 1));
      await writeSlotEntry(esp, spec("A", 2), 2);
      const boots: string[] = [];
      for (let i = 0; i < 4; i++) boots.push((await simulateSdBoot(esp))!.entry.slot!);
      expect(boots).toEqual(["A", "A", "B", "B"]);
      expect((await listSlotEntries(esp)).map((e) => e.fileName).sort()).toEqual(["a+0-2.conf", "b.conf"]);

      // restage A with 3 tries; one boot; bless
      await writeSlotEntry(esp, spec("A", 3), 3);
      expect((await simulateSdBoot(esp))!.renameTo).toBe("a+2-1.conf");
      expect(await blessSlot(esp, "A")).toBe(true);
      expect(await blessSlot(esp, "A")).toBe(false);
      expect((await readEspEntries(esp)).model.map((e) => e.fileName).sort()).toEqual(["a.conf", "b.conf"]);
      expect((await simulateSdBoot(esp))!.entry.fileName).toBe("a.conf");

      expect(await markSlotBad(esp, "A")).toBe(true);
      expect((await simulateSdBoot(esp))!.entry.fileName).toBe("b.conf");
      expect((await listSlotEntries(esp)).map((e) => e.fileName).sort()).toEqual(["a+0-1.conf", "b.conf"]);
    });
  });
}

espSuite("a directory", async (dir) => new DirEsp(dir));
espSuite(
  "a FAT image via mtools",
  async (dir) => {
    const img = join(dir, "esp.img");
    await run("mkfs.vfat", ["-F", "32", "-C", img, String(64 * 1024)]);
    return new MtoolsEsp(img);
  },
  noMtools,
);
