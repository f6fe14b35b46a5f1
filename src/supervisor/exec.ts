/** Running short-lived helper tools (ctr, etcdctl) with a timeout and their stderr in the error. */
import { execFile } from "node:child_process";

export interface ToolOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  env?: Record<string, string>;
}

export class ToolError extends Error {
  constructor(
    message: string,
    readonly stderr: string,
    readonly exitCode: number | null,
  ) {
    super(message);
    this.name = "ToolError";
  }
}

export function runTool(args: string[], opts: ToolOptions = {}): Promise<string> {
  const [bin, ...rest] = args;
  return new Promise((resolve, reject) => {
    execFile(
      bin,
      rest,
      {
        signal: opts.signal,
        timeout: opts.timeoutMs ?? 30_000,
        killSignal: "SIGKILL",
        maxBuffer: 64 << 20,
        env: opts.env ? { ...process.env, ...opts.env } : process.env,
        encoding: "utf8",
      },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        const e = err as NodeJS.ErrnoException & { code?: number | string; killed?: boolean };
        const detail = stderr.trim().split("\n").filter(Boolean).pop() ?? e.message;
        const what = typeof e.code === "string" ? e.message : detail;
        reject(new ToolError(`${bin} ${rest.slice(0, 6).join(" ")}: ${what}`, stderr, typeof e.code === "number" ? e.code : null));
      },
    );
  });
}
