/**
 * Hardware (i6300esb, ...) or software (softdog) watchdog: once /dev/watchdog is open the kernel reboots the
 * machine unless it is fed within the timeout (i6300esb: 30 s, softdog: 60 s by default). PID 1 feeds it from
 * the event loop, so a wedged agent (a blocked loop, a hung kernel) ends in a reboot, which spends a boot try
 * on a trial slot. Nothing is ever written as the "magic close" 'V': the watchdog stays armed until reboot.
 */
import { existsSync, openSync, writeSync } from "node:fs";
import type { ModuleLoader } from "./modules.js";

export interface Watchdog {
  device: string;
  stop(): void;
}

/**
 * Opens /dev/watchdog (loading softdog first when no hardware driver bound one) and feeds it every
 * `intervalMs`. Returns undefined when there is none; never throws.
 */
export function armWatchdog(o: { modules?: Pick<ModuleLoader, "load">; intervalMs?: number; device?: string; log?: (m: string) => void }): Watchdog | undefined {
  const log = o.log ?? (() => {});
  const device = o.device ?? "/dev/watchdog";
  try {
    if (!existsSync(device) && o.modules) o.modules.load(["softdog"]);
    if (!existsSync(device)) {
      log("watchdog: no /dev/watchdog; not armed");
      return undefined;
    }
    const fd = openSync(device, "w");
    const feed = () => {
      try {
        writeSync(fd, "\0");
      } catch {
        // a failed feed is what the watchdog is for
      }
    };
    feed();
    const timer = setInterval(feed, o.intervalMs ?? 5_000);
    return { device, stop: () => clearInterval(timer) };
  } catch (err) {
    log(`watchdog: not armed: ${(err as Error).message}`);
    return undefined;
  }
}
