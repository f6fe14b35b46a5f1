/** The pure parts of `machined init` (the whole of it boots in test/vm, under QEMU). */
import { describe, expect, it } from "vitest";
import { parseCmdlineNet } from "../../src/pid1/cmdline-net.js";
import { cmdlineWords } from "../../src/pid1/init.js";
import { attachLoopReadOnly, loopConfig, LO_FLAGS } from "../../src/host/loop.js";
import { FakeSyscalls, MNT, MS } from "../../src/host/syscalls.js";
import { STATE_DIR, unmountSystemDisk } from "../../src/pid1/state-mounts.js";

describe("kernel command line", () => {
  it("parses the static network words", () => {
    expect(parseCmdlineNet("console=ttyS0 machined.ip=10.0.2.15/24 machined.gw=10.0.2.2 machined.dns=10.0.2.3,1.1.1.1 machined.slot=A")).toEqual({
      iface: undefined,
      address: "10.0.2.15/24",
      gateway: "10.0.2.2",
      dns: ["10.0.2.3", "1.1.1.1"],
    });
    expect(parseCmdlineNet("machined.ip=10.0.0.5/8 machined.iface=enp1s0")?.iface).toBe("enp1s0");
  });

  it("ignores a missing or malformed address", () => {
    expect(parseCmdlineNet("console=ttyS0")).toBeUndefined();
    expect(parseCmdlineNet("machined.ip=10.0.2.15")).toBeUndefined();
  });

  it("splits words into a map, bare words included", () => {
    const w = cmdlineWords("initrd=\\A\\x ro panic=10 machined.testfail=exit\n");
    expect(w.get("panic")).toBe("10");
    expect(w.get("ro")).toBe("");
    expect(w.get("machined.testfail")).toBe("exit");
  });
});

describe("loop devices", () => {
  it("builds struct loop_config with the backing fd and lo_flags", () => {
    const b = loopConfig(7, LO_FLAGS.READ_ONLY | LO_FLAGS.AUTOCLEAR);
    expect(b.length).toBe(304);
    expect(b.readUInt32LE(0)).toBe(7);
    expect(b.readUInt32LE(60)).toBe(5);
  });

  it("asks loop-control for a free device, configures it and closes the backing file", () => {
    const sys = new FakeSyscalls();
    sys.ioctlResults.set(0x4c82, 3);
    const opened: string[] = [];
    const closed: number[] = [];
    let next = 10;
    const fs = {
      open: (p: string) => (opened.push(p), next++),
      close: (fd: number) => void closed.push(fd),
    };
    const r = attachLoopReadOnly(sys, "/rootfs.sqsh", fs);
    expect(r).toEqual({ device: "/dev/loop3", fd: 12 });
    expect(opened).toEqual(["/dev/loop-control", "/rootfs.sqsh", "/dev/loop3"]);
    expect(closed).toEqual([10, 11]); // loop-control and the backing file; the loop fd stays open for the mount
    const calls = sys.callsOf("ioctl");
    expect(calls[0]).toEqual([10, 0x4c82, 0]);
    expect(calls[1][0]).toBe(12);
    expect(calls[1][1]).toBe(0x4c0a);
    expect((calls[1][2] as Buffer).readUInt32LE(0)).toBe(11);
  });
});

describe("unmountSystemDisk before reboot", () => {
  it("unmounts STATE and EPHEMERAL", () => {
    const sys = new FakeSyscalls();
    unmountSystemDisk({ sys });
    expect(sys.callsOf("umount")).toEqual([
      [STATE_DIR, 0],
      ["/var", 0],
    ]);
    expect(sys.callsOf("mount")).toEqual([]);
  });

  it("remounts a busy filesystem read-only instead, and detaches it when even that fails", () => {
    const sys = new FakeSyscalls();
    const log: string[] = [];
    sys.failWith.set("umount", "EBUSY");
    unmountSystemDisk({ sys, log: (m) => log.push(m) }, [STATE_DIR]);
    expect(sys.callsOf("mount")).toEqual([["none", STATE_DIR, null, MS.REMOUNT | MS.RDONLY, null]]);
    expect(log.join("\n")).toMatch(/umount \/system\/state: umount .*EBUSY; remounting read-only/);
    sys.failWith.set("mount", "EBUSY");
    unmountSystemDisk({ sys, log: (m) => log.push(m) }, [STATE_DIR]);
    expect(sys.calls.filter((c) => c.name === "umount").map((c) => c.args[1])).toEqual([0, 0, MNT.DETACH]);
    expect(log.at(-1)).toMatch(/read-only remount of \/system\/state failed .*; detaching it/);
  });

  it("leaves alone what is not a mount point (maintenance mode's tmpfs folder)", () => {
    const sys = new FakeSyscalls();
    sys.failWith.set("umount", "EINVAL");
    unmountSystemDisk({ sys }, [STATE_DIR]);
    expect(sys.calls.map((c) => c.name)).toEqual(["umount"]);
  });
});
