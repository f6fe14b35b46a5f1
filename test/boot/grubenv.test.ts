import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { DirEsp } from "../../src/boot/esp-dir.js";
import { grubConfig, grubDecide, parseGrubCfg, simulateGrubBoot, writeGrubConfig, type GrubSlotEntry } from "../../src/boot/grub-script.js";
import { encodeGrubEnv, GRUBENV_HEADER, parseGrubEnv, readGrubEnv, writeBootVars } from "../../src/boot/grubenv.js";
import { runTool as run } from "../../src/boot/tools.js";
import { missingTools, tempDir } from "./helpers.js";

const noEditenv = (await missingTools("grubenv vs grub-editenv", ["grub-editenv"])).length > 0;
const noScriptCheck = (await missingTools("grub.cfg syntax", ["grub-script-check"])).length > 0;

const entries: GrubSlotEntry[] = [
  { slot: "A", title: "machined v1 (slot A)", linux: "/A/vmlinuz", initrd: ["/A/initramfs.img"], options: "console=ttyS0 machined.slot=A" },
  { slot: "B", title: "machined v2's (slot B)", linux: "/B/vmlinuz", initrd: ["/B/initramfs.img"], options: "machined.slot=B" },
];

describe("grubenv format", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ dir, cleanup } = await tempDir()));
  afterAll(async () => cleanup());

  it("is a 1024-byte block with the GRUB header and '#' padding", () => {
    const b = encodeGrubEnv({ next_slot: "B", boot_tries: "3", last_good: "A" });
    expect(b.length).toBe(1024);
    expect(b.toString().startsWith(`${GRUBENV_HEADER}next_slot=B\nboot_tries=3\nlast_good=A\n#`)).toBe(true);
    expect(b.toString().endsWith("####")).toBe(true);
    expect(parseGrubEnv(b)).toEqual({ next_slot: "B", boot_tries: "3", last_good: "A" });
    expect(parseGrubEnv(encodeGrubEnv({ x: "a\\b" }))).toEqual({ x: "a\\b" });
    expect(() => parseGrubEnv(Buffer.alloc(1024, "#"))).toThrow(/header/);
  });

  it.skipIf(noEditenv)("is read by grub-editenv, and grub-editenv's file is read by us", async () => {
    const ours = join(dir, "ours");
    await writeFile(ours, encodeGrubEnv({ next_slot: "B", boot_tries: "3", last_good: "A" }));
    expect((await run("grub-editenv", [ours, "list"])).stdout.toString()).toBe("next_slot=B\nboot_tries=3\nlast_good=A\n");
    const theirs = join(dir, "theirs");
    await run("grub-editenv", [theirs, "create"]);
    await run("grub-editenv", [theirs, "set", "last_good=B", "boot_tries=0"]);
    expect(parseGrubEnv(await readFile(theirs))).toEqual({ last_good: "B", boot_tries: "0" });
  });

  it("keeps unrelated variables when our three are rewritten", async () => {
    const esp = new DirEsp(dir);
    await esp.mkdir("/grub");
    await esp.write("/grub/grubenv", encodeGrubEnv({ saved_entry: "x", boot_tries: "5" }));
    await writeBootVars(esp, { nextSlot: "A", bootTries: 2, lastGood: "B" });
    expect(await readGrubEnv(esp)).toEqual({ saved_entry: "x", boot_tries: "2", next_slot: "A", last_good: "B" });
    await expect(writeBootVars(esp, { bootTries: 10 })).rejects.toThrow(/0\.\.9/);
  });
});

describe("grub.cfg script and its model", () => {
  const cfg = grubConfig({ entries, lastGood: "A" });
  const facts = parseGrubCfg(cfg);

  it.skipIf(noScriptCheck)("is valid GRUB script (grub-script-check)", async () => {
    const { dir, cleanup } = await tempDir();
    const f = join(dir, "grub.cfg");
    await writeFile(f, cfg);
    await run("grub-script-check", [f]);
    await cleanup();
  });

  it("bakes the last-known-good as default and lists it first", () => {
    expect(facts).toEqual({ bakedDefault: "A", entries: ["A", "B"], linuxBySlot: { A: "/A/vmlinuz", B: "/B/vmlinuz" } });
    expect(parseGrubCfg(grubConfig({ entries, lastGood: "B" })).entries).toEqual(["B", "A"]);
    expect(cfg).toContain(`menuentry 'machined v2'\\''s (slot B)' --id B {`);
  });

  it("boots the trial slot while tries remain and decrements before booting", () => {
    const env = { next_slot: "B", boot_tries: "3", last_good: "A" };
    expect(grubDecide(env, facts)).toEqual({ slot: "B", trial: true, saved: { ...env, boot_tries: "2" } });
    expect(grubDecide({ ...env, boot_tries: "1" }, facts).saved?.boot_tries).toBe("0");
  });

  it("boots last_good once the tries are spent, and the baked default without a readable grubenv", () => {
    expect(grubDecide({ next_slot: "B", boot_tries: "0", last_good: "A" }, facts)).toEqual({ slot: "A", trial: false, saved: undefined });
    expect(grubDecide({ next_slot: "", boot_tries: "0", last_good: "B" }, facts).slot).toBe("B");
    expect(grubDecide(undefined, facts).slot).toBe("A");
    expect(grubDecide({ last_good: "garbage" }, facts).slot).toBe("A");
  });

  it("falls back to the default when the trial slot cannot be loaded", () => {
    expect(grubDecide({ next_slot: "B", boot_tries: "3", last_good: "A" }, facts, (s) => s !== "B").slot).toBe("A");
  });

  it("drives the real files: three trial boots of B, then A", async () => {
    const { dir, cleanup } = await tempDir();
    const esp = new DirEsp(dir);
    await writeGrubConfig(esp, { entries, lastGood: "A" });
    await writeBootVars(esp, { nextSlot: "B", bootTries: 3, lastGood: "A" });
    const boots: (string | undefined)[] = [];
    for (let i = 0; i < 5; i++) boots.push((await simulateGrubBoot(esp)).slot);
    expect(boots).toEqual(["B", "B", "B", "A", "A"]);
    expect((await readGrubEnv(esp))?.boot_tries).toBe("0");
    await cleanup();
  });
});
