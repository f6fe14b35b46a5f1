/**
 * arm64 in QEMU (TCG, AAVMF → systemd-boot → slot A): the real agent as PID 1 boots to the maintenance API and
 * answers Version, Dmesg and ApplyConfiguration (a dry run with install disk /dev/vda: the arm64 image built on an
 * amd64 host has no ext4/mtools install tools unless their arm64 packages are in the download cache).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { MachineService } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { DataSchema } from "../../src/machinery/api/gen/common/common_pb.js";
import { generateConfigs } from "../../src/machinery/generate/index.js";
import { apply } from "../api/harness.js";
import { make, missingVmPrereqs, retry, TOP, version, Vm } from "./vm.js";

const ARCH = "arm64" as const;
const DIR = path.join(TOP, "build", ARCH, "vm");
const skip = missingVmPrereqs(ARCH);
if (skip) console.log(`test/vm/arm64: skipped: ${skip}`);

describe.skipIf(!!skip)("arm64 in QEMU: maintenance API", () => {
  let vm: Vm | undefined;

  beforeAll(() => {
    const out = path.join(TOP, "build", ARCH);
    if (!(process.env.VM_SKIP_BUILD && fs.existsSync(path.join(out, "disk.raw")))) {
      make(["image", `ARCH=${ARCH}`, "ZSTD_LEVEL=3"], `${ARCH}-maint`, { SKIP_SYSROOT: fs.existsSync(path.join(out, "work/sysroot/opt/node")) ? "1" : "" });
    }
    fs.mkdirSync(DIR, { recursive: true });
    for (const f of ["boot.raw", "install.qcow2", "vars.fd"]) fs.rmSync(path.join(DIR, f), { force: true });
    execFileSync("cp", ["--sparse=always", path.join(out, "disk.raw"), path.join(DIR, "boot.raw")]);
    execFileSync("qemu-img", ["create", "-q", "-f", "qcow2", path.join(DIR, "install.qcow2"), "8G"]);
  }, 20 * 60_000);

  afterAll(() => vm?.kill());

  it("boots to the maintenance API and answers Version, Dmesg, ApplyConfiguration", async () => {
    vm = await Vm.start({
      arch: ARCH,
      name: "arm64-maintenance",
      varsFile: path.join(DIR, "vars.fd"),
      disks: [
        { file: path.join(DIR, "install.qcow2"), format: "qcow2", serial: "install", bootindex: 1 },
        { file: path.join(DIR, "boot.raw"), format: "raw", serial: "boot", bootindex: 0 },
      ],
      timeoutMs: 15 * 60_000,
    });
    await vm.waitFor(/\[machined init .*\] listening on :50000/, 8 * 60_000);
    const c = vm.insecureClient();
    const v = await retry(() => version(c), 60_000);
    expect(v.messages[0].version?.arch).toBe("arm64");

    const msgs = await c.stream(MachineService, "Dmesg", m.DmesgRequestSchema, DataSchema, { follow: false, tail: false }, { deadlineMs: 60_000 });
    expect(Buffer.concat(msgs.map((x) => Buffer.from(x.bytes))).toString("utf8")).toContain("Linux version");

    // metal validation needs an install disk; the arm64 image built on amd64 has no install tools (see header),
    // so the apply is a dry run: validated and answered, nothing installed
    const cfgs = await generateConfigs({ clusterName: "vm-arm64", endpoint: "https://10.0.2.15:6443", installDisk: "/dev/vda", talosVersion: "v1.13" });
    const res = await apply(c, cfgs.controlplane, m.ApplyConfigurationRequest_Mode.AUTO, { dryRun: true });
    expect(res.messages.length).toBe(1);
    expect(res.messages[0].modeDetails).toMatch(/dry run/i);
  }, 15 * 60_000);
});
