/**
 * Local mode's stand-in for firmware + systemd-boot: at each (simulated) power-on it runs the sd-boot model
 * against the real entry files on the image — which spends a boot try by renaming the entry, exactly as
 * sd-boot does — and "starts" the chosen slot. A slot whose installer manifest carries the test marker
 * `fail: "crash"` or `"panic"` dies before the agent serves, the watchdog/panic=10 reboots, and the model runs
 * again. So fallback is decided by the bootloader rules and the files, never by this code.
 */
import type { Slot } from "../../boot/layout.js";
import { simulateSdBoot } from "../../boot/sdboot.js";
import type { FailMarker } from "./payload.js";
import type { SystemDisk } from "./system-disk.js";

export interface BootAttempt {
  slot: Slot;
  entry: string;
  osVersion?: string;
  /** Why this attempt died (crash/panic); undefined for the boot that came up. */
  failed?: FailMarker;
}

export interface FirmwareResult {
  /** The slot that came up, or undefined when nothing was bootable. */
  slot?: Slot;
  osVersion?: string;
  fail?: FailMarker;
  attempts: BootAttempt[];
}

export const MAX_SIMULATED_BOOTS = 16;

export async function simulateFirmware(disk: SystemDisk, maxBoots = MAX_SIMULATED_BOOTS): Promise<FirmwareResult> {
  const attempts: BootAttempt[] = [];
  for (let i = 0; i < maxBoots; i++) {
    const d = await simulateSdBoot(disk.esp);
    const slot = d?.entry.slot;
    if (!d || !slot) return { attempts };
    const manifest = await disk.slotManifest(slot);
    const attempt: BootAttempt = { slot, entry: d.entry.fileName, osVersion: manifest?.version };
    attempts.push(attempt);
    if (manifest?.fail === "crash" || manifest?.fail === "panic") {
      attempt.failed = manifest.fail;
      continue;
    }
    return { slot, osVersion: manifest?.version, fail: manifest?.fail, attempts };
  }
  return { attempts };
}

export function describeAttempts(attempts: BootAttempt[]): string {
  return attempts.map((a) => `${a.slot}(${a.osVersion ?? "?"})${a.failed ? `:${a.failed}` : ""}`).join(" → ") || "none";
}
