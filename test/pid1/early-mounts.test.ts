import { describe, expect, it } from "vitest";
import { parseMountInfo, type MountFs } from "../../src/host/mounts.js";
import { FakeSyscalls, MS } from "../../src/host/syscalls.js";
import { EARLY_MOUNTS, EarlyMountError, earlyMounts } from "../../src/pid1/early-mounts.js";

/** A fake /proc/self/mountinfo that reflects what the fake syscalls mounted; null until /proc is mounted. */
function fakeFs(sys: FakeSyscalls, preMounted: [string, string][] = []): MountFs & { dirs: string[] } {
  const dirs: string[] = [];
  return {
    dirs,
    readMountInfo() {
      const mounted = [...preMounted, ...sys.callsOf("mount").map((a) => [a[1], a[2]] as [string, string])];
      if (!mounted.some(([t]) => t === "/proc")) return null;
      return mounted.map(([t, fs], i) => `${20 + i} 1 0:${i} / ${t} rw shared:${i} - ${fs} ${fs} rw`).join("\n");
    },
    mkdirp(path) {
      dirs.push(path);
    },
  };
}

describe("earlyMounts", () => {
  it("on a bare rootfs mounts everything in order with the hardening flags", () => {
    const sys = new FakeSyscalls();
    sys.pid = 1;
    const fs = fakeFs(sys);
    const outcomes = earlyMounts({ sys, fs });
    expect(outcomes.map((o) => o.action)).toEqual(EARLY_MOUNTS.map(() => "mounted"));
    const targets = sys.callsOf("mount").map((a) => a[1]);
    expect(targets).toEqual(["/proc", "/sys", "/dev", "/dev/pts", "/dev/shm", "/run", "/tmp", "/sys/fs/cgroup"]);
    const cg = sys.callsOf("mount").find((a) => a[1] === "/sys/fs/cgroup")!;
    expect(cg[2]).toBe("cgroup2");
    expect((cg[3] as number) & (MS.NOSUID | MS.NODEV | MS.NOEXEC)).toBe(MS.NOSUID | MS.NODEV | MS.NOEXEC);
    expect(sys.callsOf("mount").find((a) => a[1] === "/dev")).toEqual(["devtmpfs", "/dev", "devtmpfs", MS.NOSUID, "mode=0755"]);
    expect(fs.dirs).toContain("/dev/pts");
  });

  it("is idempotent: what mountinfo already shows is skipped, a second run mounts nothing", () => {
    const sys = new FakeSyscalls();
    sys.pid = 1;
    const fs = fakeFs(sys, [["/proc", "proc"], ["/sys", "sysfs"], ["/dev", "devtmpfs"]]);
    const first = earlyMounts({ sys, fs });
    expect(first.filter((o) => o.action === "skipped").map((o) => o.target)).toEqual(["/proc", "/sys", "/dev"]);
    expect(sys.callsOf("mount")).toHaveLength(5);
    const second = earlyMounts({ sys, fs });
    expect(second.every((o) => o.action === "skipped")).toBe(true);
    expect(sys.callsOf("mount")).toHaveLength(5);
  });

  it("does nothing when not PID 1 (local mode)", () => {
    const sys = new FakeSyscalls();
    expect(earlyMounts({ sys, fs: fakeFs(sys) })).toEqual([]);
    expect(sys.calls.filter((c) => c.name !== "getpid")).toEqual([]);
  });

  it("tries every mount, then throws naming the failure", () => {
    const sys = new FakeSyscalls();
    sys.pid = 1;
    sys.failWith.set("mount", "EPERM");
    const err = (() => {
      try {
        earlyMounts({ sys, fs: fakeFs(sys) });
      } catch (e) {
        return e as EarlyMountError;
      }
    })();
    expect(err).toBeInstanceOf(EarlyMountError);
    expect(err!.message).toContain("/proc (proc): mount failed: EPERM");
    expect(err!.outcomes.map((o) => o.action)).toEqual(EARLY_MOUNTS.map(() => "failed"));
    expect(sys.calls.filter((c) => c.name === "mount" && c.error === "EPERM")).toHaveLength(EARLY_MOUNTS.length);
  });
});

describe("parseMountInfo", () => {
  it("handles optional fields and octal escapes", () => {
    const text =
      "36 35 98:0 /mnt1 /mnt\\040two rw,noatime master:1 shared:2 - ext3 /dev/root rw,errors=continue\n" +
      "37 35 0:5 / /proc rw,nosuid - proc proc rw\n";
    const [a, b] = parseMountInfo(text);
    expect(a).toMatchObject({ id: 36, parentId: 35, root: "/mnt1", mountPoint: "/mnt two", fstype: "ext3", source: "/dev/root" });
    expect(b).toMatchObject({ mountPoint: "/proc", fstype: "proc", options: "rw,nosuid", superOptions: "rw" });
  });
});
