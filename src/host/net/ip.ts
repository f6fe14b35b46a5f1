/**
 * Runs iproute2 in JSON mode. We always pass -N so tables, protocols, scopes, route types and link types
 * come back as kernel numbers: iproute2's names differ from Talos's and can be renamed in /etc/iproute2.
 * This module only ever runs read-only `show` commands.
 *
 * node:child_process rather than execa: when the process is out of descriptors, execa 9 rejects with a
 * TypeError and leaves the child's 'error' event (spawn EMFILE) unhandled, which kills the process.
 * execFile reports every spawn failure through its callback.
 */
import { execFile } from "node:child_process";

export interface NetnsOptions {
  /** Named network namespace (as in `ip netns list`) to observe instead of our own. */
  netns?: string;
}

export async function ipJson<T = unknown[]>(args: string[], opts?: NetnsOptions): Promise<T> {
  // `ip -n NS` enters the namespace for this one command, like `ip netns exec NS ip …` without
  // remounting /sys, and needs no shell.
  const argv = [...(opts?.netns ? ["-n", opts.netns] : []), "-N", "-j", ...args];
  const stdout = await new Promise<string>((resolve, reject) => {
    try {
      execFile("ip", argv, { timeout: 15_000, maxBuffer: 64 * 1024 * 1024, encoding: "utf8" }, (err, out, errOut) => {
        if (err) {
          const detail = String(errOut ?? "").trim();
          reject(Object.assign(new Error(`ip ${argv.join(" ")}: ${detail || err.message}`), { stderr: detail }));
        } else resolve(out);
      });
    } catch (err) {
      // Synchronous spawn failures (e.g. invalid arguments) land here instead of the callback.
      reject(new Error(`ip ${argv.join(" ")}: ${(err as Error).message}`));
    }
  });
  // Some iproute2 versions print nothing instead of [] for an empty dump.
  return JSON.parse(stdout.trim() || "[]") as T;
}
