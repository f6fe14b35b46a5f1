/**
 * What happens at every boot once a system disk exists:
 *   1. a staged upgrade (META tags 7/8) is written into the inactive slot;
 *   2. the booted slot is learned: local mode runs the firmware model against the image (firmware.ts); PID 1
 *      reads `machined.slot=` from /proc/cmdline;
 *   3. when MachineStatus reaches running + ready, boot/slots.ts `onBootReady` blesses a trial slot, or — when
 *      a different slot is pending — records that the trial failed (event, Diagnostic, META record);
 *   4. a trial boot that is not ready within the deadline reboots, spending one of its tries.
 */
import { hostFiles } from "../../host/files/index.js";
import type { Slot } from "../../boot/layout.js";
import { listSlotEntries } from "../../boot/sdboot.js";
import { slotFromCmdline } from "../../boot/slot-files.js";
import { onBootReady, readSlotState } from "../../boot/slots.js";
import type { Node } from "../node.js";
import { SequenceReporter } from "../sequence.js";
import { describeAttempts, simulateFirmware, type BootAttempt } from "./firmware.js";
import { ReadyWatch } from "./ready-watch.js";
import type { SystemDisk } from "./system-disk.js";

/** The readiness condition a test payload marked `fail: "not-ready"` holds unmet (local mode only). */
export const TEST_NOT_READY_CONDITION = "installerTestPayload";

export interface BootedSlot {
  slot: Slot;
  osVersion?: string;
  /** True while this boot is an unblessed trial of a new version. */
  trial: boolean;
  attempts: BootAttempt[];
}

export interface BootEnv {
  node: Node;
  local: boolean;
  readyTimeoutMs: number;
  systemDisk(): Promise<SystemDisk | undefined>;
  applyStagedUpgrade(disk: SystemDisk): Promise<void>;
  publish(disk: SystemDisk | undefined, extra?: { noBoot?: string }): Promise<void>;
}

export class BootFlow {
  booted: BootedSlot | undefined;
  private readonly watch: ReadyWatch;

  constructor(private readonly env: BootEnv) {
    this.watch = new ReadyWatch(env.node.state);
  }

  private get log() {
    return this.env.node.log;
  }

  /** Node.beforeBoot hook. Never throws: a boot must go on even when the disk is unreadable. */
  async onBoot(): Promise<void> {
    this.watch.disarm();
    this.booted = undefined;
    this.env.node.setCondition(TEST_NOT_READY_CONDITION, undefined);
    let disk: SystemDisk | undefined;
    try {
      disk = await this.env.systemDisk();
      if (!disk) return await this.env.publish(undefined);
      await this.env.applyStagedUpgrade(disk);
      const booted = await this.whichSlot(disk);
      if (!booted) return;
      this.booted = booted;
      this.log.info({ slot: booted.slot, osVersion: booted.osVersion, trial: booted.trial, attempts: describeAttempts(booted.attempts) }, `booted slot ${booted.slot}`);
      await this.env.publish(disk);
      this.armReady(disk, booted);
    } catch (err) {
      this.log.error({ err }, "system disk: boot bookkeeping failed");
    }
  }

  /** After install: slot A is running and already blessed. */
  installed(slot: Slot, osVersion: string): void {
    this.watch.disarm();
    this.booted = { slot, osVersion, trial: false, attempts: [] };
  }

  forget(): void {
    this.watch.disarm();
    this.booted = undefined;
  }

  private async whichSlot(disk: SystemDisk): Promise<BootedSlot | undefined> {
    let slot: Slot | undefined;
    let attempts: BootAttempt[] = [];
    let osVersion: string | undefined;
    if (this.env.local) {
      const fw = await simulateFirmware(disk);
      attempts = fw.attempts;
      if (!fw.slot) {
        const why = `no slot came up after ${attempts.length} simulated boot(s): ${describeAttempts(attempts)}`;
        this.log.error(why);
        await this.env.publish(disk, { noBoot: why });
        return undefined;
      }
      slot = fw.slot;
      osVersion = fw.osVersion;
      if (fw.fail === "not-ready") {
        this.env.node.setCondition(TEST_NOT_READY_CONDITION, `slot ${slot} runs a test payload marked fail: not-ready`);
      }
    } else {
      slot = slotFromCmdline(await hostFiles.readFile("/proc/cmdline", "utf8").catch(() => ""));
      if (!slot) {
        this.log.warn("the kernel command line names no machined.slot; not tracking upgrades on this boot");
        return undefined;
      }
      osVersion = (await disk.slotManifest(slot))?.version;
    }
    const booted = slot;
    const trial = await disk.withCtx(async (ctx) => {
      const counted = (await listSlotEntries(ctx.esp)).some((e) => e.slot === booted && e.counter !== undefined);
      return counted || readSlotState(ctx.meta).pending === booted;
    });
    return { slot, osVersion, trial, attempts };
  }

  private armReady(disk: SystemDisk, booted: BootedSlot): void {
    this.watch.arm({
      onReady: () => this.ready(disk, booted),
      timeoutMs: booted.trial ? this.env.readyTimeoutMs : undefined,
      onTimeout: booted.trial
        ? () => {
            this.log.warn(`slot ${booted.slot} (${booted.osVersion ?? "?"}) did not become ready within ${this.env.readyTimeoutMs} ms; rebooting to spend a boot try`);
            try {
              this.env.node.reboot("");
            } catch (err) {
              this.log.error({ err }, "could not start the reboot after the readiness deadline");
            }
          }
        : undefined,
    });
  }

  /** Running and ready: bless the trial, or record that the pending trial did not come up. */
  private async ready(disk: SystemDisk, booted: BootedSlot): Promise<void> {
    if (this.booted !== booted) return; // a newer boot took over
    try {
      const res = await disk.withCtx((ctx) => onBootReady(ctx, booted.slot));
      const seq = new SequenceReporter(this.env.node.events, "boot", "");
      if (res.action === "blessed") {
        booted.trial = false;
        await seq.phase("upgrade", [["blessBootEntry", () => {}]]);
        this.log.info({ record: res.record }, `slot ${booted.slot} (${booted.osVersion ?? "?"}) is ready: blessed as the last-known-good slot`);
      } else if (res.action === "trial-failed") {
        await seq.phase("upgrade", [["upgradeFallback", () => {}]]);
        this.log.error({ record: res.record, attempts: describeAttempts(booted.attempts) }, `upgrade failed and was rolled back: ${res.record?.reason ?? ""}`);
      } else if (res.note) {
        this.log.warn(res.note);
      }
      await this.env.publish(disk);
    } catch (err) {
      this.log.error({ err }, "system disk: recording the ready boot failed");
    }
  }
}
