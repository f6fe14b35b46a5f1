/**
 * Helpers for the tests that run a fixture as a separate process (real OS: namespaces, signals, reboot(2)).
 */
import { spawn, spawnSync } from "node:child_process";
import { readlinkSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** Why namespace tests cannot run here, or null. Printed by the tests that skip. */
export function unshareUnavailable(kind: "pid" | "mount"): string | null {
  if (process.getuid?.() !== 0) return "needs root (unshare)";
  const args = kind === "pid" ? ["--pid", "--fork", "--mount-proc", "true"] : ["--mount", "--uts", "true"];
  const probe = spawnSync("unshare", args, { stdio: "ignore" });
  if (probe.error) return `unshare not available: ${probe.error.message}`;
  if (probe.status !== 0) return `unshare ${args.join(" ")} failed (rc ${probe.status})`;
  return null;
}

export const hostNs = (kind: "pid" | "mnt") => readlinkSync(`/proc/self/ns/${kind}`);

export interface RunResult {
  /** exit code; a shell-style 128+n when killed by signal n (unshare re-raises its child's signal) */
  rc: number;
  stdout: string;
  stderr: string;
  /** parsed JSON lines from stdout */
  lines: Record<string, unknown>[];
  ms: number;
}

const SIGNUMS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };

/** Runs `[...prefix, node, --import tsx, fixture, ...args]` and collects its output. */
export function runFixture(
  name: string,
  args: string[],
  opts: { prefix?: string[]; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<RunResult> {
  const argv = [...(opts.prefix ?? []), process.execPath, "--import", "tsx", fixture(name), ...args];
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const cp = spawn(argv[0], argv.slice(1), { env: { ...process.env, ...opts.env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    cp.stdout.on("data", (d) => (stdout += d));
    cp.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => cp.kill("SIGKILL"), opts.timeoutMs ?? 25_000);
    cp.on("error", reject);
    cp.on("close", (code, signal) => {
      clearTimeout(timer);
      const lines = stdout
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const rc = code ?? 128 + (signal ? (SIGNUMS[signal] ?? 0) : 0);
      resolve({ rc, stdout, stderr, lines, ms: Date.now() - started });
    });
  });
}
