/**
 * arm64 in QEMU (TCG, AAVMF → systemd-boot → slot A): the real agent as PID 1 boots to the maintenance API and
 * answers Version and Dmesg; ApplyConfiguration with install disk /dev/vda installs from the arm64 installer image
 * (pushed to a loopback docker-registry), and the installed disk then boots into the mTLS API on slot A.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { MachineService } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { DataSchema } from "../../src/machinery/api/gen/common/common_pb.js";
import { generateConfigs } from "../../src/machinery/generate/index.js";
import { apply, talosconfigCreds } from "../api/harness.js";
import { make, missingVmPrereqs, retry, TOP, version, Vm } from "./vm.js";
import { GUEST_REGISTRY, missingRegistryTools, Registry } from "./registry.js";

const ARCH = "arm64" as const;
const DIR = path.join(TOP, "build", ARCH, "vm");
const BOOT_MS = 8 * 60_000;
const skip = missingVmPrereqs(ARCH) ?? missingRegistryTools();
if (skip) console.log(`test/vm/arm64: skipped: ${skip}`);

describe.skipIf(!!skip)("arm64 in QEMU: maintenance API, install, boot from the installed disk", () => {
  let vm: Vm | undefined;
  let registry: Registry;
  let ref: string;
  const varsFile = path.join(DIR, "vars.fd");
  const install = { file: path.join(DIR, "install.qcow2"), format: "qcow2" as const, serial: "install" };

  beforeAll(async () => {
    const out = path.join(TOP, "build", ARCH);
    if (!(process.env.VM_SKIP_BUILD && fs.existsSync(path.join(out, "disk.raw")))) {
      make(["image", `ARCH=${ARCH}`, "ZSTD_LEVEL=3", "IMAGE_VERSION=vm-arm64", `CMDLINE_EXTRA=machined.insecure-registries=${GUEST_REGISTRY}`], `${ARCH}-maint`, {
        SKIP_SYSROOT: fs.existsSync(path.join(out, "work/sysroot/opt/node")) ? "1" : "",
      });
    }
    fs.mkdirSync(DIR, { recursive: true });
    for (const f of ["boot.raw", "install.qcow2", "vars.fd"]) fs.rmSync(path.join(DIR, f), { force: true });
    execFileSync("cp", ["--sparse=always", path.join(out, "disk.raw"), path.join(DIR, "boot.raw")]);
    execFileSync("qemu-img", ["create", "-q", "-f", "qcow2", install.file, "8G"]);
    registry = await Registry.start();
    ref = registry.push(path.join(out, `installer-${ARCH}.oci.tar`), "machined/installer:vm-arm64");
  }, 20 * 60_000);

  afterAll(() => {
    vm?.kill();
    registry?.stop();
  });

  it("boots to the maintenance API, answers Version and Dmesg, installs with ApplyConfiguration, boots the installed disk", async () => {
    vm = await Vm.start({
      arch: ARCH,
      name: "arm64-maintenance",
      varsFile,
      disks: [
        { ...install, bootindex: 1 },
        { file: path.join(DIR, "boot.raw"), format: "raw", serial: "boot", bootindex: 0 },
      ],
      timeoutMs: 15 * 60_000,
    });
    await vm.waitFor(/\[machined init .*\] listening on :50000/, BOOT_MS);
    const c = vm.insecureClient();
    const v = await retry(() => version(c), 60_000);
    expect(v.messages[0].version?.arch).toBe("arm64");

    const msgs = await c.stream(MachineService, "Dmesg", m.DmesgRequestSchema, DataSchema, { follow: false, tail: false }, { deadlineMs: 60_000 });
    expect(Buffer.concat(msgs.map((x) => Buffer.from(x.bytes))).toString("utf8")).toContain("Linux version");

    const cfgs = await generateConfigs({ clusterName: "vm-arm64", endpoint: "https://10.0.2.15:6443", installDisk: "/dev/vda", installImage: ref, talosVersion: "v1.13" });
    const res = await apply(c, cfgs.controlplane);
    expect(res.messages.length).toBe(1);
    expect(vm.lines.some((l) => /slot A holds vm-arm64/.test(l.text))).toBe(true);
    const r = await Promise.race([vm.exited, new Promise<"timeout">((ok) => setTimeout(() => ok("timeout"), 5 * 60_000))]);
    if (r === "timeout") throw new Error(`the guest did not reboot after the install\n${vm.tail()}`);

    vm = await Vm.start({ arch: ARCH, name: "arm64-installed", varsFile, disks: [{ ...install, bootindex: 0 }], timeoutMs: 15 * 60_000 });
    await vm.waitFor(/\[machined init .*\] listening on :50000/, BOOT_MS);
    expect(vm.lines.some((l) => /machined\.slot=A/.test(l.text))).toBe(true);
    const admin = vm.mtlsClient(talosconfigCreds(cfgs.talosconfig));
    const v2 = await retry(() => version(admin), 120_000);
    expect(v2.messages[0].version?.arch).toBe("arm64");
  }, 30 * 60_000);
});
