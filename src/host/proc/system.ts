/** Small identity facts of the running kernel: hostname, boot id (reboot detection), uptime. */
import { type RootOptions, readText } from "./fs.js";

export async function readHostname(opts?: RootOptions): Promise<string> {
  return (await readText(opts, "proc/sys/kernel/hostname")).trim();
}

/** The NIS domain name; the kernel reports "(none)" when unset, which we turn into "". */
export async function readDomainname(opts?: RootOptions): Promise<string> {
  const d = (await readText(opts, "proc/sys/kernel/domainname")).trim();
  return d === "(none)" ? "" : d;
}

/** talosctl reboot compares this value before and after to detect that the node really rebooted. */
export async function readBootId(opts?: RootOptions): Promise<string> {
  return (await readText(opts, "proc/sys/kernel/random/boot_id")).trim();
}

export interface Uptime {
  /** Seconds since boot (CLOCK_BOOTTIME). */
  uptime: number;
  /** Summed idle seconds of all CPUs. */
  idle: number;
}

export function parseUptime(text: string): Uptime {
  const [up, idle] = text.trim().split(/\s+/).map(Number);
  if (!Number.isFinite(up)) throw new Error(`malformed /proc/uptime: ${JSON.stringify(text)}`);
  return { uptime: up, idle: Number.isFinite(idle) ? idle : 0 };
}

export async function readUptime(opts?: RootOptions): Promise<Uptime> {
  return parseUptime(await readText(opts, "proc/uptime"));
}
