/**
 * Runs iproute2 in JSON mode. We always pass -N so tables, protocols, scopes, route types and link types
 * come back as kernel numbers: iproute2's names differ from Talos's and can be renamed in /etc/iproute2.
 * This module only ever runs read-only `show` commands.
 */
import { execa } from "execa";

export interface NetnsOptions {
  /** Named network namespace (as in `ip netns list`) to observe instead of our own. */
  netns?: string;
}

export async function ipJson<T = unknown[]>(args: string[], opts?: NetnsOptions): Promise<T> {
  // `ip -n NS` enters the namespace for this one command, like `ip netns exec NS ip …` without
  // remounting /sys, and needs no shell.
  const argv = [...(opts?.netns ? ["-n", opts.netns] : []), "-N", "-j", ...args];
  const { stdout } = await execa("ip", argv, { timeout: 15_000 });
  // Some iproute2 versions print nothing instead of [] for an empty dump.
  return JSON.parse(stdout.trim() || "[]") as T;
}
