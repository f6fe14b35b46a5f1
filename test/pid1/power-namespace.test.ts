/**
 * Real reboot(2) through the koffi binding, made safe by running it as PID 1 of a child PID namespace, where
 * pid_namespaces(7) turns it into "kill the namespace init": poweroff → SIGINT (rc 130), restart → SIGHUP (129).
 * The harness refuses unless it is PID 1 and its /proc/self/ns/pid differs from ours (HOST_PIDNS).
 */
import { describe, expect, it } from "vitest";
import { hostNs, runFixture, unshareUnavailable } from "./run-fixture.js";

const skip = unshareUnavailable("pid");
if (skip) console.log(`skipping reboot(2) namespace tests: ${skip}`);
const inNamespace = { prefix: ["unshare", "--pid", "--fork", "--mount-proc"], env: { HOST_PIDNS: hostNs("pid") } };

describe("power as PID 1 of a PID namespace", () => {
  it.skipIf(skip)("powerOff() stops services, then reboot(2) POWER_OFF ends the namespace (rc 130)", async () => {
    const run = await runFixture("pid1-harness.ts", ["poweroff"], inNamespace);
    expect(run.lines).toContainEqual({ stopped: "poweroff" });
    expect(run.lines).not.toContainEqual({ returnedAfterReboot: true });
    expect(run.rc, run.stdout + run.stderr).toBe(130);
  });

  it.skipIf(skip)("reboot() uses RB_AUTOBOOT (rc 129)", async () => {
    const run = await runFixture("pid1-harness.ts", ["reboot"], inNamespace);
    expect(run.lines).toContainEqual({ stopped: "reboot" });
    expect(run.rc, run.stdout + run.stderr).toBe(129);
  });

  it.skipIf(skip)("fatal error reboots after the delay although the cleanup hook never settles", async () => {
    const run = await runFixture("pid1-harness.ts", ["fatal"], { ...inNamespace, env: { ...inNamespace.env, FATAL_DELAY_MS: "300" } });
    expect(run.stderr).toContain("boom from harness");
    expect(run.stderr).toContain("rebooting in 0.3 s");
    expect(run.lines.some((l) => "cleanupStarted" in l)).toBe(true);
    expect(run.rc, run.stdout + run.stderr).toBe(129);
  });

  it.skipIf(skip)("the harness guard refuses reboot(2) when not in a child PID namespace", async () => {
    const run = await runFixture("pid1-harness.ts", ["poweroff"], { env: { HOST_PIDNS: hostNs("pid") } });
    expect(run.rc).toBe(3);
    expect(run.lines[0]).toMatchObject({ refused: true });
  });
});

describe("fatal handler in local mode (real process)", () => {
  it("logs the uncaught exception and exits 1 once the cleanup timeout passes", async () => {
    const run = await runFixture("pid1-harness.ts", ["fatal"], { env: { FATAL_DELAY_MS: "300" } });
    expect(run.stderr).toContain("fatal: uncaughtException: Error: boom from harness");
    expect(run.rc).toBe(1);
    const exit = run.lines.find((l) => "exitCode" in l) as { exitCode: number; afterMs: number };
    expect(exit.exitCode).toBe(1);
    expect(exit.afterMs).toBeGreaterThanOrEqual(300);
  });
});
