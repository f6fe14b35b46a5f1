/**
 * Runs the Debian disk tools (sgdisk, mkfs.*, mtools, xfs_io) that the boot layer leans on. Kept in one place
 * so every failure names the command, its exit code and stderr — install errors are otherwise hard to read.
 */
import { execFile } from "node:child_process";
import { access, constants } from "node:fs/promises";

export interface RunResult {
  stdout: Buffer;
  stderr: string;
}

export class ToolError extends Error {
  constructor(
    readonly command: string,
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(`${command} failed (exit ${exitCode ?? "signal"}): ${stderr.trim() || "no output"}`);
    this.name = "ToolError";
  }
}

/** mtools refuses images whose geometry is not a whole number of "tracks"; partitions never are. */
const TOOL_ENV = { ...process.env, MTOOLS_SKIP_CHECK: "1", LC_ALL: "C" };

export function run(cmd: string, args: string[], input?: Uint8Array): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      cmd,
      args,
      { encoding: "buffer", maxBuffer: 256 * 1024 * 1024, env: TOOL_ENV },
      (err, stdout, stderr) => {
        const errText = stderr.toString("utf8");
        if (err) {
          const code = (err as { code?: string | number }).code;
          if (code === "ENOENT") {
            reject(new ToolError(cmd, null, `${cmd} is not installed (not found in PATH)`));
            return;
          }
          reject(new ToolError(`${cmd} ${args.join(" ")}`, typeof code === "number" ? code : null, errText));
          return;
        }
        resolve({ stdout, stderr: errText });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

const PATH_DIRS = (process.env.PATH ?? "/usr/bin:/bin").split(":").concat(["/usr/sbin", "/sbin"]);
const found = new Map<string, string | undefined>();

/** Full path of a tool, or undefined. Debian puts mkfs.* in /usr/sbin, which a non-root PATH may lack. */
export async function which(tool: string): Promise<string | undefined> {
  if (found.has(tool)) return found.get(tool);
  let hit: string | undefined;
  for (const dir of PATH_DIRS) {
    try {
      await access(`${dir}/${tool}`, constants.X_OK);
      hit = `${dir}/${tool}`;
      break;
    } catch {
      // keep looking
    }
  }
  found.set(tool, hit);
  return hit;
}

/** Like run(), but resolves the tool through which() first so /usr/sbin tools work for non-root users too. */
export async function runTool(tool: string, args: string[], input?: Uint8Array): Promise<RunResult> {
  const path = await which(tool);
  if (!path) throw new ToolError(tool, null, `${tool} is not installed (looked in ${PATH_DIRS.join(":")})`);
  return run(path, args, input);
}
