import { spawn } from "node:child_process";
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { defaultSignalActions, installSignalHandlers, type HandledSignal } from "../../src/pid1/signals.js";
import { fixture } from "./run-fixture.js";

describe("signal mapping (listeners invoked through process.emit)", () => {
  let uninstall: (() => void) | undefined;
  afterEach(() => uninstall?.());

  const record = (isPid1: boolean) => {
    const seen: string[] = [];
    uninstall = installSignalHandlers({
      isPid1,
      onShutdown: (s) => seen.push(`shutdown:${s}`),
      onReboot: (s) => seen.push(`reboot:${s}`),
      onRepeat: (s, first) => seen.push(`repeat:${s}:${first}`),
    });
    return seen;
  };

  it("as PID 1: SIGINT (ctrl-alt-del) reboots, later signals only count as repeats", () => {
    const seen = record(true);
    process.emit("SIGINT" as never);
    process.emit("SIGTERM" as never);
    expect(seen).toEqual(["reboot:SIGINT", "repeat:SIGTERM:reboot"]);
  });

  it("as PID 1: SIGPWR powers off", () => {
    const seen = record(true);
    process.emit("SIGPWR" as never);
    expect(seen).toEqual(["shutdown:SIGPWR"]);
  });

  it("local mode: every handled signal means shutdown", () => {
    expect(Object.values(defaultSignalActions(false))).toEqual(["shutdown", "shutdown", "shutdown", "shutdown"]);
    const seen = record(false);
    process.emit("SIGHUP" as never);
    expect(seen).toEqual(["shutdown:SIGHUP"]);
  });

  it("uninstall removes the listeners but keeps the SIGUSR1 guard", () => {
    const before = (["SIGTERM", "SIGINT", "SIGPWR", "SIGHUP"] as HandledSignal[]).map((s) => process.listenerCount(s));
    const u = installSignalHandlers({ onShutdown: () => {}, onReboot: () => {} });
    u();
    const after = (["SIGTERM", "SIGINT", "SIGPWR", "SIGHUP"] as HandledSignal[]).map((s) => process.listenerCount(s));
    expect(after).toEqual(before);
    expect(process.listenerCount("SIGUSR1")).toBeGreaterThan(0);
  });
});

/**
 * Real signal: a child node with --inspect-port=<port> (the port SIGUSR1 activation would use; a private port so
 * concurrent runs do not collide on 9229) is sent SIGUSR1. With the guard nothing may listen; without it
 * (control) the inspector must open, proving the check can fail.
 */
async function sendUsr1(mode: "guard" | "none", port: number) {
  const cp = spawn(process.execPath, [`--inspect-port=127.0.0.1:${port}`, "--import", "tsx", fixture("sigusr1-child.mjs"), mode]);
  let stdout = "";
  let stderr = "";
  cp.stdout.on("data", (d) => (stdout += d));
  cp.stderr.on("data", (d) => (stderr += d));
  try {
    await waitFor(() => stdout.includes("ready"), 20_000);
    cp.kill("SIGUSR1");
    await waitFor(() => stdout.includes("SIGUSR1-ignored") || stderr.includes("Debugger listening"), 5_000);
    await new Promise((r) => setTimeout(r, 300)); // give a (wrongly) opened inspector time to listen
    const listening = await new Promise<boolean>((resolve) => {
      const s = connect(port, "127.0.0.1");
      s.on("connect", () => (s.destroy(), resolve(true)));
      s.on("error", () => resolve(false));
    });
    return { stdout, stderr, listening };
  } finally {
    cp.kill("SIGKILL");
  }
}

async function waitFor(cond: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out waiting for child");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("SIGUSR1 never opens the inspector", () => {
  const port = 20000 + (process.pid % 20000);
  it("with the guard: handler runs, nothing listens", async () => {
    const r = await sendUsr1("guard", port);
    expect(r.stdout).toContain("SIGUSR1-ignored");
    expect(r.stderr).not.toContain("Debugger listening");
    expect(r.listening).toBe(false);
  });

  it("control without the guard: the inspector opens", async () => {
    const r = await sendUsr1("none", port + 1);
    expect(r.stderr).toContain(`Debugger listening on ws://127.0.0.1:${port + 1}`);
    expect(r.listening).toBe(true);
  });
});
