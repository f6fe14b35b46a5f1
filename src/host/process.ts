/**
 * Spawning and killing supervised processes. Every child gets its own process group (detached) so that a
 * stop can signal the whole tree a service forked, not just the main PID: no orphans survive a stop.
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { withDroppedCapabilities } from "./capabilities.js";

export interface SpawnOptions {
  /** argv; args[0] is the executable (absolute or looked up in PATH). */
  args: string[];
  /** Merged over process.env unless cleanEnv is set. */
  env?: Record<string, string>;
  cleanEnv?: boolean;
  cwd?: string;
  uid?: number;
  gid?: number;
  /** Receives stdout and stderr chunks, interleaved in arrival order. */
  onOutput?: (chunk: Buffer) => void;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ProcessHandle {
  readonly pid: number;
  /** Process group id (equals pid: the child leads its own group). */
  readonly pgid: number;
  /** Resolves when the main process exits (group members may still be alive). */
  readonly exited: Promise<ExitStatus>;
  hasExited(): boolean;
  /** Signal only the main process. */
  signal(sig: NodeJS.Signals): void;
  /** Signal every process of the group; false when the group no longer exists. */
  signalGroup(sig: NodeJS.Signals): boolean;
}

/** The capability interface, so that tests of callers could swap in a fake. */
export interface ProcessSpawner {
  spawn(opts: SpawnOptions): Promise<ProcessHandle>;
}

/** Go-style description of an exit, as upstream events show it ("exit status 1", "signal: killed"). */
export function formatExit(s: ExitStatus): string {
  if (s.signal) return `signal: ${SIGNAL_TEXT[s.signal] ?? s.signal}`;
  return `exit status ${s.code ?? 0}`;
}

const SIGNAL_TEXT: Partial<Record<NodeJS.Signals, string>> = {
  SIGKILL: "killed",
  SIGTERM: "terminated",
  SIGINT: "interrupt",
  SIGSEGV: "segmentation fault",
  SIGABRT: "aborted",
  SIGHUP: "hangup",
  SIGPIPE: "broken pipe",
};

const ERRNO_TEXT: Record<string, string> = {
  ENOENT: "no such file or directory",
  EACCES: "permission denied",
  ENOEXEC: "exec format error",
  ENOTDIR: "not a directory",
};

/** Thrown when the executable could not be started at all (missing binary, no permission). */
export class SpawnError extends Error {
  constructor(
    readonly path: string,
    readonly errno: string,
  ) {
    super(`fork/exec ${path}: ${ERRNO_TEXT[errno] ?? errno}`);
    this.name = "SpawnError";
  }
}

export function spawnProcess(opts: SpawnOptions): Promise<ProcessHandle> {
  const [file, ...rest] = opts.args;
  if (!file) return Promise.reject(new Error("no executable given"));
  const env = opts.cleanEnv ? { ...opts.env } : { ...process.env, ...opts.env };
  const child = spawn(...withDroppedCapabilities(file, rest, { env, uid: opts.uid }), { // capabilities.ts: no CAP_SYS_BOOT/CAP_SYS_MODULE
    detached: true,
    cwd: opts.cwd,
    env,
    uid: opts.uid,
    gid: opts.gid,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return new Promise((resolve, reject) => {
    child.once("error", (err: NodeJS.ErrnoException) => {
      if (child.pid === undefined) reject(new SpawnError(file, err.code ?? err.message));
    });
    child.once("spawn", () => {
      const pid = child.pid as number;
      let done = false;
      const onData = (c: Buffer) => opts.onOutput?.(c);
      child.stdout?.on("data", onData);
      child.stderr?.on("data", onData);
      // 'exit' rather than 'close': background children may hold the pipes open long after the main exits.
      const exited = new Promise<ExitStatus>((res) => {
        child.once("exit", (code, signal) => {
          done = true;
          res({ code, signal });
        });
      });
      resolve({
        pid,
        pgid: pid,
        exited,
        hasExited: () => done,
        signal: (sig) => {
          if (!done) safeKill(pid, sig);
        },
        signalGroup: (sig) => killProcessGroup(pid, sig),
      });
    });
  });
}

export const realSpawner: ProcessSpawner = { spawn: spawnProcess };

function safeKill(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

/** Signal a whole process group. The pgid cannot be reused while any member lives, so this is safe late. */
export function killProcessGroup(pgid: number, sig: NodeJS.Signals): boolean {
  if (pgid <= 1) return false;
  return safeKill(-pgid, sig);
}

/** Live (non-zombie) members of a process group, read from /proc. */
export function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${e}/stat`, "utf8");
    } catch {
      continue;
    }
    // Fields after the parenthesised command name: state ppid pgrp ...
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(f[2]) === pgid && f[0] !== "Z" && f[0] !== "X") out.push(Number(e));
  }
  return out;
}

export interface StopOptions {
  /** How long to wait after SIGTERM before SIGKILL. */
  timeoutMs: number;
  onTerm?: () => void;
  onKill?: () => void;
}

/**
 * Graceful stop of a whole group: SIGTERM the group, wait for the main process up to the timeout, then
 * SIGKILL the group. Whatever is still in the group afterwards is killed too and waited for (bounded).
 */
export async function stopProcessGroup(h: ProcessHandle, opts: StopOptions): Promise<ExitStatus> {
  if (!h.hasExited()) {
    opts.onTerm?.();
    h.signalGroup("SIGTERM");
    const timedOut = await Promise.race([h.exited.then(() => false), delay(opts.timeoutMs).then(() => true)]);
    if (timedOut && !h.hasExited()) {
      opts.onKill?.();
      h.signalGroup("SIGKILL");
    }
  }
  const status = await h.exited;
  await reapGroup(h.pgid);
  return status;
}

/** SIGKILL any leftover members of a group and wait (up to ~2 s) until none are alive. */
export async function reapGroup(pgid: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (groupMembers(pgid).length === 0) return;
    killProcessGroup(pgid, "SIGKILL");
    await delay(20);
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

// ------------------------------------------------------------------------------------------ fake

/**
 * Pids of fake processes start above the kernel's largest pid_max (2^22), so that nothing done with them by
 * the real helpers (a group signal, a /proc scan in reapGroup) can ever reach a real process.
 */
const FAKE_PID_BASE = 5_000_000;
let nextFakePid = FAKE_PID_BASE;

/** A process that exists only in memory: the test makes it print and exit, and sees the signals it got. */
export class FakeProcess implements ProcessHandle {
  readonly pid = ++nextFakePid;
  readonly pgid = this.pid;
  readonly exited: Promise<ExitStatus>;
  /** Every signal delivered, to the process or its group, in order. */
  readonly signals: NodeJS.Signals[] = [];
  /** Signals the process survives (e.g. SIGTERM for one that must be killed). */
  ignore = new Set<NodeJS.Signals>();
  private done = false;
  private resolveExit!: (s: ExitStatus) => void;

  constructor(readonly opts: SpawnOptions) {
    this.exited = new Promise((r) => (this.resolveExit = r));
  }

  output(text: string | Buffer): void {
    if (!this.done) this.opts.onOutput?.(typeof text === "string" ? Buffer.from(text) : text);
  }

  exit(code: number | null, signal: NodeJS.Signals | null = null): void {
    if (this.done) return;
    this.done = true;
    this.resolveExit({ code, signal });
  }

  hasExited(): boolean {
    return this.done;
  }

  signal(sig: NodeJS.Signals): void {
    if (this.done) return;
    this.signals.push(sig);
    if (sig === "SIGKILL" || !this.ignore.has(sig)) this.exit(null, sig);
  }

  signalGroup(sig: NodeJS.Signals): boolean {
    if (this.done) return false;
    this.signal(sig);
    return true;
  }
}

/**
 * ProcessSpawner for tests: every spawn makes a FakeProcess and hands it to `behave` (print, exit now or
 * later, ignore SIGTERM); an executable listed in `missing` fails to start like a missing binary.
 */
export class FakeSpawner implements ProcessSpawner {
  readonly spawned: FakeProcess[] = [];
  readonly missing = new Set<string>();

  constructor(private readonly behave: (p: FakeProcess) => void = () => {}) {}

  async spawn(opts: SpawnOptions): Promise<ProcessHandle> {
    const file = opts.args[0];
    if (!file) throw new Error("no executable given");
    if (this.missing.has(file)) throw new SpawnError(file, "ENOENT");
    const p = new FakeProcess(opts);
    this.spawned.push(p);
    // like a real child, it starts running after spawn() has returned
    queueMicrotask(() => this.behave(p));
    return p;
  }
}
