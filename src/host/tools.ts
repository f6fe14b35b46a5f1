/**
 * Short-lived helper programs (ctr, etcdctl, sgdisk, mkfs.*, mtools, xfs_io, blockdev): the capability
 * every layer above uses instead of node:child_process. Three shapes, because callers need three:
 *   exec   argv → stdout text, with a timeout and an abort signal (ctr, etcdctl); failures are ToolError with
 *          the last line of stderr;
 *   run    a tool looked up in PATH plus /usr/sbin and /sbin → stdout bytes, optional stdin (disk tools);
 *          failures are CommandError naming the command, its exit code and stderr;
 *   stream argv → stdout as a stream for large outputs (`ctr content get`); a non-zero exit rejects at the
 *          end of the stream with ToolExitError.
 * `hostTools` runs real programs; `FakeTools` answers from handlers a test registers.
 */
import { execFile, spawn } from "node:child_process";
import { constants, promises as fs } from "node:fs";

export interface ToolOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  env?: Record<string, string>;
}

export interface RunResult {
  stdout: Buffer;
  stderr: string;
}

export interface Tools {
  exec(args: string[], opts?: ToolOptions): Promise<string>;
  run(tool: string, args: string[], input?: Uint8Array): Promise<RunResult>;
  stream(args: string[]): AsyncIterable<Buffer>;
  /** Full path of a tool, or undefined. */
  which(tool: string): Promise<string | undefined>;
}

/** `exec` failures: the message names the program and the reason (stderr's last line). */
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

/** `run` failures: the command line, its exit code and stderr (disk tool errors are hard to read otherwise). */
export class CommandError extends Error {
  constructor(
    readonly command: string,
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(`${command} failed (exit ${exitCode ?? "signal"}): ${stderr.trim() || "no output"}`);
    this.name = "ToolError";
  }
}

/** `stream` failures after the output: the exit code and stderr. */
export class ToolExitError extends Error {
  constructor(
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(`exit ${exitCode}: ${stderr.trim()}`);
    this.name = "ToolExitError";
  }
}

// ------------------------------------------------------------------------------------------ real

function execReal(args: string[], opts: ToolOptions = {}): Promise<string> {
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

/** mtools refuses images whose geometry is not a whole number of "tracks"; partitions never are. */
const TOOL_ENV = { ...process.env, MTOOLS_SKIP_CHECK: "1", LC_ALL: "C" };

/** Runs `cmd` as given (no PATH search beyond execFile's own). */
export function runCommand(cmd: string, args: string[], input?: Uint8Array): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { encoding: "buffer", maxBuffer: 256 * 1024 * 1024, env: TOOL_ENV }, (err, stdout, stderr) => {
      const errText = stderr.toString("utf8");
      if (err) {
        const code = (err as { code?: string | number }).code;
        if (code === "ENOENT") {
          reject(new CommandError(cmd, null, `${cmd} is not installed (not found in PATH)`));
          return;
        }
        reject(new CommandError(`${cmd} ${args.join(" ")}`, typeof code === "number" ? code : null, errText));
        return;
      }
      resolve({ stdout, stderr: errText });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

const PATH_DIRS = (process.env.PATH ?? "/usr/bin:/bin").split(":").concat(["/usr/sbin", "/sbin"]);
const found = new Map<string, string | undefined>();

/** Debian puts mkfs.* in /usr/sbin, which a non-root PATH may lack. */
async function whichReal(tool: string): Promise<string | undefined> {
  if (found.has(tool)) return found.get(tool);
  let hit: string | undefined;
  for (const dir of PATH_DIRS) {
    try {
      await fs.access(`${dir}/${tool}`, constants.X_OK);
      hit = `${dir}/${tool}`;
      break;
    } catch {
      // keep looking
    }
  }
  found.set(tool, hit);
  return hit;
}

async function runReal(tool: string, args: string[], input?: Uint8Array): Promise<RunResult> {
  const path = await whichReal(tool);
  if (!path) throw new CommandError(tool, null, `${tool} is not installed (looked in ${PATH_DIRS.join(":")})`);
  return runCommand(path, args, input);
}

async function* streamReal(args: string[]): AsyncGenerator<Buffer> {
  const [bin, ...rest] = args;
  const child = spawn(bin, rest, { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve(code));
  });
  // a spawn failure is reported by the loop below; keep it from counting as unhandled meanwhile
  exited.catch(() => {});
  try {
    for await (const chunk of child.stdout) yield chunk as Buffer;
    const code = await exited;
    if (code !== 0) throw new ToolExitError(code, stderr);
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
  }
}

export const hostTools: Tools = { exec: execReal, run: runReal, stream: streamReal, which: whichReal };

// ------------------------------------------------------------------------------------------ fake

/** What a fake tool answers: stdout (and stderr); a non-zero `code` fails the call like a real exit would. */
export interface FakeReply {
  stdout?: string | Uint8Array;
  stderr?: string;
  code?: number;
}

export type FakeHandler = (args: string[], input?: Uint8Array) => FakeReply | Promise<FakeReply>;

/**
 * Tools for tests: each program name (argv[0]'s base name) answers through a registered handler; a program
 * without one fails as a missing binary does. `calls` records every argv in order.
 */
export class FakeTools implements Tools {
  readonly calls: string[][] = [];
  private readonly handlers = new Map<string, FakeHandler>();

  on(program: string, handler: FakeHandler): this {
    this.handlers.set(program, handler);
    return this;
  }

  private async answer(args: string[], input?: Uint8Array): Promise<{ stdout: Buffer; stderr: string; code: number } | undefined> {
    this.calls.push([...args]);
    const h = this.handlers.get(args[0].slice(args[0].lastIndexOf("/") + 1));
    if (!h) return undefined;
    const r = await h(args.slice(1), input);
    const out = r.stdout ?? "";
    return { stdout: typeof out === "string" ? Buffer.from(out) : Buffer.from(out), stderr: r.stderr ?? "", code: r.code ?? 0 };
  }

  async exec(args: string[]): Promise<string> {
    const r = await this.answer(args);
    const label = `${args[0]} ${args.slice(1, 7).join(" ")}`;
    if (!r) throw new ToolError(`${label}: spawn ${args[0]} ENOENT`, "", null);
    if (r.code !== 0) throw new ToolError(`${label}: ${r.stderr.trim().split("\n").filter(Boolean).pop() ?? `exit status ${r.code}`}`, r.stderr, r.code);
    return r.stdout.toString("utf8");
  }

  async run(tool: string, args: string[], input?: Uint8Array): Promise<RunResult> {
    const r = await this.answer([tool, ...args], input);
    if (!r) throw new CommandError(tool, null, `${tool} is not installed (fake)`);
    if (r.code !== 0) throw new CommandError(`${tool} ${args.join(" ")}`, r.code, r.stderr);
    return { stdout: r.stdout, stderr: r.stderr };
  }

  async *stream(args: string[]): AsyncGenerator<Buffer> {
    const r = await this.answer(args);
    if (!r) throw Object.assign(new Error(`spawn ${args[0]} ENOENT`), { code: "ENOENT" });
    if (r.stdout.length > 0) yield r.stdout;
    if (r.code !== 0) throw new ToolExitError(r.code, r.stderr);
  }

  async which(tool: string): Promise<string | undefined> {
    return this.handlers.has(tool) ? `/fake/bin/${tool}` : undefined;
  }
}
