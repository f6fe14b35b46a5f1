/**
 * Supervised processes lose CAP_SYS_BOOT and CAP_SYS_MODULE (upstream's DefaultDroppedCapabilities) from their
 * bounding, permitted and effective sets, and keep everything else this process has; the executable replaces the
 * wrapper in place (same pid), and a missing one still fails to start as before. Root only: other users hold
 * no capabilities to drop.
 */
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { spawn, spawnSync } from "node:child_process";
import { CAP_SYS_BOOT, CAP_SYS_MODULE, parseCapabilities, resolveExecutable, withDroppedCapabilities } from "../../src/host/capabilities.js";
import { SpawnError, spawnProcess } from "../../src/host/process.js";

const isRoot = process.getuid?.() === 0;
if (!isRoot) console.log("skipping capability drop tests: needs root (only root holds the capabilities)");

async function run(args: string[], uid?: number): Promise<{ out: string; pid: number; code: number | null }> {
  let out = "";
  const h = await spawnProcess({ args, uid, onOutput: (c) => (out += c.toString()) });
  const st = await h.exited;
  // Output may trail the exit slightly: give the pipes a moment to flush.
  await new Promise((r) => setTimeout(r, 50));
  return { out, pid: h.pid, code: st.code };
}

const bit = (n: number) => 1n << BigInt(n);

describe("dropped capabilities", () => {
  it("resolves executables like execvp", () => {
    expect(resolveExecutable("sh")).toMatch(/\/sh$/);
    expect(resolveExecutable("/bin/sh")).toBe("/bin/sh");
    expect(resolveExecutable("no-such-binary-xyz")).toBeUndefined();
  });

  it("leaves commands alone where there is nothing to drop", () => {
    expect(withDroppedCapabilities("sh", ["-c", "true"], { uid: 1000 })).toEqual(["sh", ["-c", "true"]]);
    expect(withDroppedCapabilities("no-such-binary-xyz", [])).toEqual(["no-such-binary-xyz", []]);
    expect(withDroppedCapabilities("sh", [], { capabilities: [] })).toEqual(["sh", []]);
  });

  it.skipIf(!isRoot)("runs the service without CAP_SYS_BOOT/CAP_SYS_MODULE, everything else kept, in place", async () => {
    const mine = parseCapabilities(readFileSync("/proc/self/status", "utf8"));
    const r = await run(["sh", "-c", "echo pid=$$; grep ^Cap /proc/self/status; echo args=$0"]);
    expect(r.code).toBe(0);
    const caps = parseCapabilities(r.out);
    const dropped = bit(CAP_SYS_BOOT) | bit(CAP_SYS_MODULE);
    expect(mine.bounding & dropped).toBe(dropped); // the parent still has them
    for (const set of [caps.bounding, caps.permitted, caps.effective]) {
      expect(set & dropped).toBe(0n);
      expect(set).toBe(mine.bounding & ~dropped);
    }
    expect(caps.inheritable & dropped).toBe(0n);
    expect(caps.ambient).toBe(0n);
    // `sh -c` saw its own pid as the spawned one: the wrapper exec'd in place.
    expect(r.out).toContain(`pid=${r.pid}`);
    expect(r.out).toContain("args=sh");
  });

  for (const wrapper of ["setpriv", "node"] as const) {
    it.skipIf(!isRoot || (wrapper === "setpriv" && !resolveExecutable("setpriv")))(`drops them through the ${wrapper} wrapper too`, () => {
      const mine = parseCapabilities(readFileSync("/proc/self/status", "utf8"));
      const [cmd, argv] = withDroppedCapabilities("sh", ["-c", "grep ^Cap /proc/self/status"], { wrapper });
      expect(cmd.endsWith(wrapper === "node" ? "node" : "setpriv")).toBe(true);
      const r = spawnSync(cmd, argv, { encoding: "utf8" });
      expect(r.status).toBe(0);
      const caps = parseCapabilities(r.stdout);
      const dropped = bit(CAP_SYS_BOOT) | bit(CAP_SYS_MODULE);
      expect(caps.bounding).toBe(mine.bounding & ~dropped);
      expect(caps.effective).toBe(mine.bounding & ~dropped);
    });
  }

  for (const wrapper of ["setpriv", "node"] as const) {
    it.skipIf(!isRoot || (wrapper === "setpriv" && !resolveExecutable("setpriv")))(`a service started through the ${wrapper} wrapper dies with its supervisor`, async () => {
      // A stand-in supervisor (a shell) starts the wrapped sleep, prints its pid and is then SIGKILLed: the
      // sleep must go with it, as containerd and etcd go when machined dies.
      const [cmd, argv] = withDroppedCapabilities("sleep", ["300"], { wrapper });
      const q = (a: string) => `'${a.replace(/'/g, "'\\''")}'`;
      const sup = spawn("sh", ["-c", `${[cmd, ...argv].map(q).join(" ")} & echo $!; wait`], { stdio: ["ignore", "pipe", "inherit"] });
      const pid = await new Promise<number>((resolve) => sup.stdout!.once("data", (b: Buffer) => resolve(Number(b.toString().trim()))));
      const alive = (p: number) => {
        try {
          const st = readFileSync(`/proc/${p}/stat`, "utf8");
          return !/^\d+ \([^)]*\) Z/.test(st);
        } catch {
          return false;
        }
      };
      // The wrapper has exec'd sleep once /proc shows it.
      for (let i = 0; i < 200 && !readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith("sleep"); i++) await new Promise((r) => setTimeout(r, 50));
      expect(alive(pid)).toBe(true);
      sup.kill("SIGKILL");
      for (let i = 0; i < 200 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
      const outlived = alive(pid);
      if (outlived) process.kill(pid, "SIGKILL"); // leave nothing behind when the check fails
      expect(outlived, "the service outlived its supervisor").toBe(false);
    });
  }

  it.skipIf(!isRoot)("still reports a missing executable as a spawn failure", async () => {
    await expect(spawnProcess({ args: ["no-such-binary-xyz"] })).rejects.toBeInstanceOf(SpawnError);
  });
});
