/**
 * The Debian disk tools (sgdisk, mkfs.*, mtools, xfs_io, blockdev) the boot layer leans on, run through the
 * host's Tools capability (src/host/tools.ts), so every failure names the command, its exit code and stderr.
 */
import { CommandError, hostTools, runCommand, type RunResult } from "../host/tools.js";

export { CommandError as ToolError, type RunResult };

/** Runs `cmd` as given. */
export const run = runCommand;

/** Full path of a tool, or undefined. Debian puts mkfs.* in /usr/sbin, which a non-root PATH may lack. */
export function which(tool: string): Promise<string | undefined> {
  return hostTools.which(tool);
}

/** Like run(), but resolves the tool through which() first so /usr/sbin tools work for non-root users too. */
export function runTool(tool: string, args: string[], input?: Uint8Array): Promise<RunResult> {
  return hostTools.run(tool, args, input);
}
