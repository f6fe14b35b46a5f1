/**
 * The real GRUB (Debian's grub-pc-bin, core.img made by image/mkgrub.sh) under the real SeaBIOS, on a disk that
 * our install code wrote: it must spend the try counter in grubenv before the kernel starts and fall back to the
 * last-known-good slot once the tries are gone. Each boot runs the image's kernel with a dummy initramfs and
 * `panic=-1`, so the kernel panics at once and QEMU (-no-reboot) exits; the slot GRUB chose is read from the
 * kernel's "Command line:" line. Before every boot our model of grub.cfg (grubDecide) predicts the choice.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import path from "node:path";
import { MtoolsEsp } from "../../src/boot/esp-mtools.js";
import { grubDecide, parseGrubCfg } from "../../src/boot/grub-script.js";
import { GRUBCFG_PATH, GRUBENV_PATH, readGrubEnv } from "../../src/boot/grubenv.js";
import { GiB, partitionFor, planLayout, writeLayout, type Slot } from "../../src/boot/layout.js";
import { beginUpgrade, installFirstSlot } from "../../src/boot/slots.js";
import { SystemDisk } from "../../src/lifecycle/install/system-disk.js";
import { make, missingVmPrereqs, TOP, Vm } from "./vm.js";

const ARCH = "amd64" as const;
const OUT = path.join(TOP, "build", ARCH);
const DIR = path.join(OUT, "vm");
const skip = missingVmPrereqs(ARCH);

describe.skipIf(!!skip)("GRUB under SeaBIOS on an installed disk", () => {
  const disk = path.join(DIR, "grub-bios.raw");
  const initrd = path.join(DIR, "grub-bios-initrd");
  let esp: MtoolsEsp;
  const boots: Record<string, number> = {};

  beforeAll(async () => {
    const need = ["vmlinuz", "grub-boot.img", "grub-core.img"].map((f) => path.join(OUT, f));
    if (!need.every((f) => fs.existsSync(f))) make(["image", `ARCH=${ARCH}`, "ZSTD_LEVEL=3"], `${ARCH}-grub`);
    fs.mkdirSync(DIR, { recursive: true });
    fs.rmSync(disk, { force: true });
    fs.writeFileSync(initrd, "not an initramfs\n");
    const plan = planLayout(4 * GiB, { arch: ARCH });
    await writeLayout(disk, plan, { grubBios: { boot: path.join(OUT, "grub-boot.img"), core: path.join(OUT, "grub-core.img") } });
    const sd = await SystemDisk.open(disk);
    esp = new MtoolsEsp(disk, partitionFor(plan.partitions, "esp").offset);
    const payload = (v: string) => ({ osVersion: v, kernel: path.join(OUT, "vmlinuz"), initramfs: initrd, cmdline: "console=ttyS0,115200n8 panic=-1" });
    await sd.withCtx((ctx) => installFirstSlot(ctx, payload("grub-a")));
    await sd.withCtx((ctx) => beginUpgrade(ctx, { ...payload("grub-b"), tries: 2 }));
  }, 20 * 60_000);

  afterAll(() => {
    fs.rmSync(disk, { force: true });
    console.log(`test/vm/grub-bios: ms from power-on to the kernel's command line: ${JSON.stringify(boots)}`);
  });

  /** What our model says GRUB will do with the files as they are now. */
  const predict = async () => {
    const cfg = parseGrubCfg((await esp.read(GRUBCFG_PATH))!.toString("utf8"));
    return grubDecide(await readGrubEnv(esp), cfg);
  };

  /** Powers on under SeaBIOS; returns the slot named on the kernel command line GRUB passed. */
  const powerOn = async (name: string): Promise<Slot> => {
    const vm = await Vm.start({ arch: ARCH, name, firmware: "bios", disks: [{ file: disk, format: "raw", serial: "sys", bootindex: 0 }], varsFile: path.join(DIR, "grub-vars.fd"), memMiB: 512, timeoutMs: 5 * 60_000 });
    try {
      const line = await vm.waitFor(/Command line: .*machined\.slot=[AB]/, 4 * 60_000);
      boots[name] = line.ms;
      expect(vm.lines.some((l) => /GRUB/.test(l.text))).toBe(true);
      await vm.exited; // panic=-1 with -no-reboot: the kernel's instant reboot ends QEMU
      return /machined\.slot=([AB])/.exec(line.text)![1] as Slot;
    } finally {
      vm.kill();
    }
  };

  it("boots the trial slot B while tries remain, counting each try down in grubenv", async () => {
    for (const left of ["1", "0"]) {
      const p = await predict();
      expect(p).toMatchObject({ slot: "B", trial: true });
      expect(await powerOn(`grub-bios-trial-${left}`)).toBe("B");
      expect(await readGrubEnv(esp)).toMatchObject({ next_slot: "B", boot_tries: left, last_good: "A" });
    }
  }, 10 * 60_000);

  it("falls back to the last-known-good slot A once the tries are spent, without writing grubenv", async () => {
    expect(await predict()).toMatchObject({ slot: "A", trial: false });
    const before = await esp.read(GRUBENV_PATH);
    expect(await powerOn("grub-bios-fallback")).toBe("A");
    expect((await esp.read(GRUBENV_PATH))!.equals(before!)).toBe(true);
  }, 5 * 60_000);

  it("boots the last-known-good baked into grub.cfg when grubenv is lost", async () => {
    await esp.remove(GRUBENV_PATH);
    expect(await predict()).toMatchObject({ slot: "A", trial: false });
    expect(await powerOn("grub-bios-no-env")).toBe("A");
  }, 5 * 60_000);
});
