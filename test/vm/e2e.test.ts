/**
 * End to end in QEMU (TCG), amd64: the real agent as PID 1 of the real image.
 *   boot from the medium → maintenance API (Version, Dmesg) → ApplyConfiguration with install disk /dev/vda →
 *   install + reboot → boot from the installed disk → mTLS API with the generated talosconfig → Bootstrap →
 *   etcd healthy → upgrade to build B (slot B) from a loopback docker-registry → ready and blessed → Rollback →
 *   back on A → the same disk under BIOS firmware (SeaBIOS → GRUB) → upgrade to a broken build (its init exits) → automatic fallback to A with the event and the
 *   Diagnostic → Reset → maintenance mode again.
 * Each step depends on the previous one; after a failure the rest are skipped with the reason.
 * QEMU runs with -no-reboot: a guest reboot ends the process and the test boots the next one with the disks
 * that machine would boot from. Builds use ZSTD_LEVEL=3; VM_SKIP_BUILD=1 reuses build/amd64/vm/*.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { MachineService } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { DataSchema } from "../../src/machinery/api/gen/common/common_pb.js";
import { generateConfigs, type GeneratedConfigs } from "../../src/machinery/generate/index.js";
import { applyPatches, parsePatch } from "../../src/machinery/config/index.js";
import { GUEST_KUBE_REGISTRY } from "./kube.js";
import { apply, talosconfigCreds } from "../api/harness.js";
import type { TestClient } from "../helpers/client.js";
import { make, missingVmPrereqs, retry, TOP, version, Vm, type VmDisk } from "./vm.js";
import { GUEST_REGISTRY, missingRegistryTools, Registry } from "./registry.js";

const ARCH = "amd64" as const;
const DIR = path.join(TOP, "build", ARCH, "vm");
const BOOT_MS = 6 * 60_000;
const skip = missingVmPrereqs(ARCH) ?? missingRegistryTools();
if (skip) console.log(`test/vm/e2e: skipped: ${skip}`);

const files = {
  medium: path.join(DIR, "boot.raw"),
  install: path.join(DIR, "install.qcow2"),
  vars: path.join(DIR, "vars.fd"),
  a: path.join(DIR, "installer-a.oci.tar"),
  b: path.join(DIR, "installer-b.oci.tar"),
  broken: path.join(DIR, "installer-broken.oci.tar"),
};
const CMDLINE_EXTRA = `machined.insecure-registries=${GUEST_REGISTRY}`;

/** Builds the three images: broken and B first, A last (build/amd64 then holds A, whose disk.raw is the medium). */
function buildImages(): void {
  fs.mkdirSync(DIR, { recursive: true });
  if (process.env.VM_SKIP_BUILD && Object.values(files).slice(3).every((f) => fs.existsSync(f)) && fs.existsSync(path.join(DIR, "disk-a.raw"))) return;
  const out = path.join(TOP, "build", ARCH);
  const build = (version: string, extra: string, keep: string) => {
    make(["image", `ARCH=${ARCH}`, "ZSTD_LEVEL=3", `IMAGE_VERSION=${version}`, `CMDLINE_EXTRA=${extra}`], `${ARCH}-${version}`, { SKIP_SYSROOT: fs.existsSync(path.join(out, "work/sysroot/opt/node")) ? "1" : "" });
    fs.copyFileSync(path.join(out, `installer-${ARCH}.oci.tar`), keep);
  };
  build("vm-broken", `${CMDLINE_EXTRA} machined.testfail=exit`, files.broken);
  build("vm-b", CMDLINE_EXTRA, files.b);
  build("vm-a", CMDLINE_EXTRA, files.a);
  execFileSync("cp", ["--sparse=always", path.join(out, "disk.raw"), path.join(DIR, "disk-a.raw")]);
}

describe.skipIf(!!skip)(`e2e ${ARCH} in QEMU`, () => {
  let registry: Registry;
  let vm: Vm | undefined;
  let cfgs: GeneratedConfigs;
  const refs: Record<string, string> = {};
  let failed: string | undefined;
  const timings: Record<string, number> = {};

  /** Runs a step unless an earlier one failed (then it is skipped, naming the first failure). */
  const step = (name: string, fn: () => Promise<void>, timeoutMs: number) =>
    it(name, async (ctx) => {
      if (failed) {
        console.log(`skipping "${name}": earlier step failed: ${failed}`);
        ctx.skip();
      }
      const t = Date.now();
      try {
        await fn();
        timings[name] = Date.now() - t;
      } catch (err) {
        failed = name;
        throw err;
      }
    }, timeoutMs);

  const disksMedium = (): VmDisk[] => [
    { file: files.install, format: "qcow2", serial: "install", bootindex: 1 },
    { file: files.medium, format: "raw", serial: "boot", bootindex: 0 },
  ];
  const disksInstalled = (): VmDisk[] => [{ file: files.install, format: "qcow2", serial: "install", bootindex: 0 }];

  const boot = async (name: string, disks: VmDisk[]): Promise<Vm> => {
    vm?.kill();
    vm = await Vm.start({ arch: ARCH, name, disks, varsFile: files.vars, timeoutMs: 20 * 60_000 });
    await vm.waitFor(/\[machined init .*\] listening on :50000/, BOOT_MS);
    return vm;
  };
  /** The guest rebooted (QEMU -no-reboot exits): waits for it. */
  const rebooted = async (timeoutMs = 5 * 60_000) => {
    const v = vm!;
    const r = await Promise.race([v.exited, new Promise<"timeout">((res) => setTimeout(() => res("timeout"), timeoutMs))]);
    if (r === "timeout") throw new Error(`the guest did not reboot within ${timeoutMs} ms\n${v.tail()}`);
  };
  const admin = (): TestClient => vm!.mtlsClient(talosconfigCreds(cfgs.talosconfig));
  const serial = (re: RegExp) => vm!.lines.some((l) => re.test(l.text));

  beforeAll(async () => {
    buildImages();
    registry = await Registry.start();
    refs.a = registry.push(files.a, "machined/installer:vm-a");
    refs.b = registry.push(files.b, "machined/installer:vm-b");
    refs.broken = registry.push(files.broken, "machined/installer:vm-broken");
    for (const f of [files.install, files.vars, files.medium]) fs.rmSync(f, { force: true });
    execFileSync("qemu-img", ["create", "-q", "-f", "qcow2", files.install, "8G"]);
    execFileSync("cp", ["--sparse=always", path.join(DIR, "disk-a.raw"), files.medium]);
    cfgs = await generateConfigs({
      clusterName: "vm",
      endpoint: "https://10.0.2.15:6443",
      installDisk: "/dev/vda",
      installImage: refs.a,
      talosVersion: "v1.13",
    });
    // etcd runs from its upstream image (registry.k8s.io/etcd), as upstream: the node pulls it from the machine's
    // loopback registry (make registry; the guest sees the host as 10.0.2.2), which stands in for registry.k8s.io.
    const etcdMirror = `machine:\n  registries:\n    mirrors:\n      registry.k8s.io:\n        endpoints: [http://${GUEST_KUBE_REGISTRY}]\n`;
    cfgs = { ...cfgs, controlplane: applyPatches(cfgs.controlplane, [parsePatch(etcdMirror)]) };
  }, 20 * 60_000);

  afterAll(() => {
    vm?.kill();
    registry?.stop();
    console.log(`test/vm/e2e timings (ms): ${JSON.stringify(timings)}`);
    fs.mkdirSync(DIR, { recursive: true });
    fs.writeFileSync(path.join(DIR, "e2e-timings.json"), JSON.stringify(timings) + "\n");
  });

  step("boots from the medium into the maintenance API", async () => {
    await boot("e2e-1-medium", disksMedium());
    const v = await retry(() => version(vm!.insecureClient()), 60_000);
    expect(v.messages[0].version?.tag).toMatch(/^v/);
  }, BOOT_MS + 90_000);

  step("answers Dmesg with the kernel log", async () => {
    const msgs = await vm!.insecureClient().stream(MachineService, "Dmesg", m.DmesgRequestSchema, DataSchema, { follow: false, tail: false }, { deadlineMs: 60_000 });
    const text = Buffer.concat(msgs.map((x) => Buffer.from(x.bytes))).toString("utf8");
    expect(text).toContain("Linux version");
    expect(text).toContain("Run /init");
  }, 90_000);

  step("ApplyConfiguration with install disk /dev/vda installs and reboots", async () => {
    const res = await apply(vm!.insecureClient(), cfgs.controlplane);
    expect(res.messages.length).toBe(1);
    expect(serial(/slot A holds vm-a/)).toBe(true);
    await rebooted();
  }, 15 * 60_000);

  step("boots from the installed disk: mTLS API with the talosconfig", async () => {
    await boot("e2e-2-installed", disksInstalled());
    expect(serial(/state: STATE of \/dev\/vda on \/system\/state/)).toBe(true);
    expect(serial(/machined\.slot=A/)).toBe(true);
    const v = await retry(() => version(admin()), 60_000);
    expect(v.messages[0].version?.tag).toMatch(/^v/);
  }, BOOT_MS + 90_000);

  step("Bootstrap starts etcd and it becomes healthy", async () => {
    await retry(() => admin().unary(MachineService, "Bootstrap", m.BootstrapRequestSchema, m.BootstrapResponseSchema, {}, { deadlineMs: 60_000 }), 120_000, 5000);
    await retry(
      async () => {
        const r = await admin().unary(MachineService, "ServiceList", EmptySchema, m.ServiceListResponseSchema, {}, { deadlineMs: 30_000 });
        const etcd = r.messages[0].services.find((s) => s.id === "etcd");
        if (etcd?.state !== "Running" || !etcd.health?.healthy) throw new Error(`etcd: ${etcd?.state ?? "absent"} healthy=${etcd?.health?.healthy}`);
      },
      8 * 60_000,
      5000,
    );
  }, 10 * 60_000);

  step("upgrades to build B from the registry: slot B boots, becomes ready and is blessed", async () => {
    const r = await admin().unary(MachineService, "Upgrade", m.UpgradeRequestSchema, m.UpgradeResponseSchema, { image: refs.b }, { deadlineMs: 10 * 60_000 });
    expect(r.messages[0].ack).toMatch(/Upgrade request received/);
    await rebooted(10 * 60_000);
    await boot("e2e-3-upgraded", disksInstalled());
    expect(serial(/machined\.slot=B/)).toBe(true);
    await vm!.waitFor(/blessed as the last-known-good slot/, 10 * 60_000);
  }, 25 * 60_000);

  step("Rollback returns to slot A", async () => {
    await admin().unary(MachineService, "Rollback", m.RollbackRequestSchema, m.RollbackResponseSchema, {}, { deadlineMs: 60_000 });
    await rebooted();
    await boot("e2e-4-rolledback", disksInstalled());
    expect(serial(/machined\.slot=A/)).toBe(true);
  }, 15 * 60_000);

  step("the installed disk also boots with BIOS firmware, through GRUB, into the same slot A", async () => {
    // a clean reboot of the running node first, so nothing it writes at boot is cut short
    await retry(() => admin().unary(MachineService, "Reboot", m.RebootRequestSchema, m.RebootResponseSchema, {}, { deadlineMs: 30_000 }), 120_000, 5000);
    await rebooted();
    vm = await Vm.start({ arch: ARCH, name: "e2e-4b-bios", firmware: "bios", disks: disksInstalled(), varsFile: files.vars, timeoutMs: 15 * 60_000 });
    await vm.waitFor(/\[machined init .*\] listening on :50000/, BOOT_MS);
    expect(serial(/GRUB/)).toBe(true);
    expect(serial(/Command line: BOOT_IMAGE=\/A\/vmlinuz .*machined\.slot=A/)).toBe(true);
    const v = await retry(() => version(admin()), 60_000);
    expect(v.messages[0].version?.tag).toMatch(/^v/);
    // left running: the next step upgrades from here (the fallback boots then use UEFI again)
  }, BOOT_MS + 5 * 60_000);

  step("a broken build falls back to the last good slot, with the event and the Diagnostic", async () => {
    const r = await admin().unary(MachineService, "Upgrade", m.UpgradeRequestSchema, m.UpgradeResponseSchema, { image: refs.broken }, { deadlineMs: 10 * 60_000 });
    expect(r.messages[0].ack).toMatch(/Upgrade request received/);
    await rebooted(10 * 60_000);
    // the broken slot's init exits at once: each boot spends a try; after 3 the counters bring back slot A
    for (let i = 0; i < 5; i++) {
      vm = await Vm.start({ arch: ARCH, name: `e2e-5-fallback-${i}`, disks: disksInstalled(), varsFile: files.vars, timeoutMs: 10 * 60_000 });
      const hit = await Promise.race([
        vm.waitFor(/\[machined init .*\] listening on :50000/, BOOT_MS).then(() => "up" as const),
        vm.exited.then(() => "rebooted" as const),
      ]).catch(() => "rebooted" as const);
      if (hit === "up") break;
    }
    expect(serial(/machined\.slot=A/)).toBe(true);
    await vm!.waitFor(/upgrade failed and was rolled back/, 10 * 60_000);
    const { State, GetRequestSchema, GetResponseSchema } = await import("../../src/machinery/api/gen/cosi/state_pb.js");
    const diag = await retry(
      () => admin().unary(State, "Get", GetRequestSchema, GetResponseSchema, { namespace: "runtime", type: "Diagnostics.runtime.talos.dev", id: "upgrade-fallback" }, { deadlineMs: 30_000 }),
      120_000,
      5000,
    );
    expect(diag.resource?.spec?.yamlSpec).toMatch(/vm-broken|fallback|slot/i);
  }, 40 * 60_000);

  step("Reset wipes the system disk: the medium boots into maintenance mode again", async () => {
    await admin().unary(MachineService, "Reset", m.ResetRequestSchema, m.ResetResponseSchema, { graceful: false, reboot: true }, { deadlineMs: 60_000 });
    await rebooted();
    await boot("e2e-6-reset", disksMedium());
    expect(serial(/state: tmpfs on \/system\/state \(maintenance/)).toBe(true);
    const v = await retry(() => version(vm!.insecureClient()), 60_000);
    expect(v.messages.length).toBe(1);
  }, 15 * 60_000);
});
