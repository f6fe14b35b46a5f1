/**
 * The koffi libc binding against the real kernel. Calls that would change the host (mount, sethostname) run in a
 * fixture inside `unshare --mount --uts`; here only calls that fail harmlessly or are read-only.
 */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { realSyscalls, SyscallError, decodeWaitStatus } from "../../src/host/syscalls.js";
import { hostNs, runFixture, unshareUnavailable } from "../pid1/run-fixture.js";

const sys = realSyscalls();

describe("native syscalls (koffi)", () => {
  it("getpid matches Node's pid; sync and syncAsync return", async () => {
    expect(sys.getpid()).toBe(process.pid);
    sys.sync();
    await expect(sys.syncAsync()).resolves.toBeUndefined();
  });

  it("errors carry the errno name and the syscall", () => {
    expect(() => sys.umount("/nonexistent-machined-test")).toThrow(SyscallError);
    try {
      sys.mount("tmpfs", "/nonexistent-machined-test", "tmpfs", 0, null);
      expect.unreachable();
    } catch (err) {
      expect(err).toMatchObject({ syscall: "mount", code: "ENOENT" });
    }
  });

  it("reboot refuses outside PID 1 without making the syscall", () => {
    expect(process.pid).not.toBe(1);
    expect(() => sys.reboot("halt")).toThrow(/refused: not PID 1/);
  });

  it("waitpidNoHang rejects pid <= 0 (never waitpid(-1)) and reports ECHILD for non-children", () => {
    expect(() => sys.waitpidNoHang(-1)).toThrow(RangeError);
    expect(() => sys.waitpidNoHang(0)).toThrow(RangeError);
    expect(() => sys.waitpidNoHang(1)).toThrow(expect.objectContaining({ code: "ECHILD" }));
  });

  it("waitpidNoHang returns null for a running child", async () => {
    const cp = spawn("sleep", ["5"], { stdio: "ignore" });
    try {
      expect(sys.waitpidNoHang(cp.pid!)).toBeNull();
    } finally {
      cp.kill("SIGKILL");
    }
  });

  it("finitModule surfaces the kernel's refusal of a non-module file", () => {
    // ENOEXEC/EPERM with module support, ENOSYS on kernels built without modules
    expect(() => sys.finitModule("/etc/hostname", "")).toThrow(expect.objectContaining({ syscall: "finit_module" }));
  });

  it("decodeWaitStatus decodes exit codes and signals", () => {
    expect(decodeWaitStatus(3 << 8)).toEqual({ code: 3, signal: null });
    expect(decodeWaitStatus(15)).toEqual({ code: null, signal: 15 });
  });
});

const skip = unshareUnavailable("mount");
if (skip) console.log(`skipping mount/sethostname namespace test: ${skip}`);

describe("native mount and sethostname in private namespaces", () => {
  it.skipIf(skip)("mounts a tmpfs, sees it in mountinfo, ensureMounted skips it, unmounts; sets the hostname", async () => {
    const run = await runFixture("mount-harness.ts", [], { prefix: ["unshare", "--mount", "--uts"], env: { HOST_MNTNS: hostNs("mnt") } });
    expect(run.rc, run.stderr).toBe(0);
    expect(run.lines[0]).toEqual({
      fstype: "tmpfs",
      options: expect.stringContaining("nosuid,nodev"),
      mode: "710",
      secondAction: "skipped",
      unmounted: true,
      hostname: "machined-ns-test",
    });
  });
});
