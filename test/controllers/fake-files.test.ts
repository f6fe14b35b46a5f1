/**
 * The controllers that read or write files, on the in-memory filesystem (host/files MemoryFiles) instead of
 * the host's: node identity, system information, security state, etc files and their readiness, volume sizes.
 */
import { describe, expect, it } from "vitest";
import { MemoryFiles } from "../../src/host/files/index.js";
import { CLUSTER_NS, IdentityType } from "../../src/machinery/resources/types/cluster.js";
import { HARDWARE_NS, SystemInformationType } from "../../src/machinery/resources/types/hardware.js";
import { RUNTIME_NS } from "../../src/machinery/resources/types/runtime.js";
import { SecurityStateType } from "../../src/machinery/resources/types/security.js";
import { InMemoryState } from "../../src/state/inmem.js";
import { base62, nodeIdentityController } from "../../src/controllers/cluster/node-identity.js";
import { systemInfoController } from "../../src/controllers/hardware/system-info.js";
import { securityStateController } from "../../src/controllers/runtime/security-state.js";
import { etcFileController } from "../../src/controllers/network/etc-files.js";
import { filesystemSize } from "../../src/controllers/block/volumes.js";
import { eventually, spec, startRuntime } from "./runtime/harness.js";

describe("controllers on MemoryFiles", () => {
  it("node identity: generated once, written atomically into the state folder, kept on the next start", async () => {
    const files = new MemoryFiles().addDir("/state");
    const s1 = new InMemoryState();
    const rt1 = startRuntime(s1, [nodeIdentityController({ stateDir: "/state", files, random: () => new Uint8Array(32).fill(3) })]);
    await eventually(() => !!spec(s1, CLUSTER_NS, IdentityType.type, "local"), 2000, "identity");
    const id = base62(new Uint8Array(32).fill(3));
    expect(files.contents("/state/node-identity.yaml")?.toString()).toBe(`nodeId: ${id}\n`);
    expect(files.ops.slice(-2)).toEqual([expect.stringMatching(/^rename \/state\/\.node-identity\.yaml\..*\.tmp -> \/state\/node-identity\.yaml$/), "sync /state"]);
    await rt1.stop();
    const s2 = new InMemoryState();
    startRuntime(s2, [nodeIdentityController({ stateDir: "/state", files, random: () => new Uint8Array(32).fill(4) })]);
    await eventually(() => !!spec(s2, CLUSTER_NS, IdentityType.type, "local"), 2000, "identity again");
    expect(spec<{ nodeId: string }>(s2, CLUSTER_NS, IdentityType.type, "local")!.nodeId).toBe(id);
  });

  it("system information: the readable DMI strings; a root-only file that refuses to be read stays empty", async () => {
    const files = new MemoryFiles()
      .addFile("/sys/class/dmi/id/sys_vendor", "QEMU\n")
      .addFile("/sys/class/dmi/id/product_serial", "S123\n")
      .fail("/sys/class/dmi/id/product_serial", "open", "EACCES");
    const s = new InMemoryState();
    startRuntime(s, [systemInfoController({ files })]);
    await eventually(() => !!spec(s, HARDWARE_NS, SystemInformationType.type, "systeminformation"), 2000, "sysinfo");
    expect(spec(s, HARDWARE_NS, SystemInformationType.type, "systeminformation")).toEqual({ manufacturer: "QEMU" });
  });

  it("security state: SELinux, FIPS and module signature enforcement from the kernel's files", async () => {
    const files = new MemoryFiles()
      .addFile("/sys/fs/selinux/enforce", "0\n")
      .addFile("/proc/sys/crypto/fips_enabled", "1\n")
      .addFile("/sys/module/module/parameters/sig_enforce", "Y\n");
    const s = new InMemoryState();
    startRuntime(s, [securityStateController({ files })]);
    await eventually(() => !!spec(s, RUNTIME_NS, SecurityStateType.type, "securitystate"), 2000, "security");
    expect(spec(s, RUNTIME_NS, SecurityStateType.type, "securitystate")).toMatchObject({ selinuxState: "enabled, permissive", fipsState: "enabled", moduleSignatureEnforced: true });
  });

  it("etc files: hosts written atomically into the etc folder, and not rewritten when unchanged", async () => {
    const files = new MemoryFiles();
    const s = new InMemoryState();
    startRuntime(s, [etcFileController("/system/etc", files)]);
    await eventually(() => files.contents("/system/etc/hosts") !== undefined, 2000, "hosts");
    expect(files.contents("/system/etc/hosts")!.toString()).toMatch(/^127\.0\.0\.1 +localhost\n/);
    expect((await files.stat("/system/etc/hosts")).mode & 0o777).toBe(0o644);
    expect(await files.readdir("/system/etc")).toEqual(["hosts"]);
  });

  it("volume size: blocks times block size of the filesystem holding the folder", async () => {
    const files = new MemoryFiles().addDir("/var");
    files.fsSize = { blocks: 1000, bsize: 4096 };
    expect(await filesystemSize("/var", files)).toBe(4_096_000);
    await expect(filesystemSize("/nope", files)).rejects.toMatchObject({ code: "ENOENT" });
  });
});
