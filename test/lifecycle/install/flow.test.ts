/**
 * The whole OS lifecycle over the real API on a 4 GiB disk-image file (local mode, simulated reboots):
 * install on the first apply, upgrade through both talosctl paths, bless, rollback (twice), automatic fallback
 * (crash loop and never-ready), staged upgrade, META keys, reset back to maintenance.
 * Installer images come from an OCI layout folder (`oci:` refs): no registry is needed here.
 */
import "./env.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { status } from "@grpc/grpc-js";
import { fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { ContainerDriver, ContainerdNamespace } from "../../../src/machinery/api/gen/common/common_pb.js";
import * as m from "../../../src/machinery/api/gen/machine/machine_pb.js";
import { MachineService } from "../../../src/machinery/api/gen/machine/machine_pb.js";
import { ImageService, ImageServicePullRequestSchema, ImageServicePullResponseSchema } from "../../../src/machinery/api/gen/machine/image_pb.js";
import { LifecycleService, LifecycleServiceUpgradeRequestSchema, LifecycleServiceUpgradeResponseSchema } from "../../../src/machinery/api/gen/machine/lifecycle_pb.js";
import { DisksResponseSchema, StorageService } from "../../../src/machinery/api/gen/storage/storage_pb.js";
import { generateConfigs } from "../../../src/machinery/generate/index.js";
import { readLayout } from "../../../src/boot/layout.js";
import { listSlotEntries } from "../../../src/boot/sdboot.js";
import { readSlotState } from "../../../src/boot/slots.js";
import { RUNTIME_NS } from "../../../src/machinery/resources/types/runtime.js";
import { missingTools } from "../../boot/helpers.js";
import { TestClient, insecureTls, mtls } from "../../helpers/client.js";
import { apply, eventually, talosconfigCreds } from "../../api/harness.js";
import { addInstallerImage } from "./fixtures.js";
import { startInstallRig, type InstallRig } from "./node.js";

const missing = await missingTools("install flow on disk-image files", ["mkfs.vfat", "mkfs.ext4", "mkfs.xfs", "xfs_io", "mcopy"]);

let rig: InstallRig;
let worker: string; // the applied machine config
let admin: TestClient;
const refs: Record<string, string> = {};
const containerd = { driver: ContainerDriver.CRI, namespace: ContainerdNamespace.NS_SYSTEM };

const insecure = () => new TestClient(rig.address, insecureTls());
const entries = async () => (await listSlotEntries((await rig.install.systemDisk())!.esp)).map((e) => e.fileName).sort();
const slotState = async () => (await rig.install.systemDisk())!.withMeta(async (meta) => readSlotState(meta));
const booted = () => rig.install.boot.booted;
const resource = (type: string, id: string) => rig.node.node.state.get({ namespace: RUNTIME_NS, type, id });
const ready = () => rig.node.node.status.current.stage === "running" && rig.node.node.status.current.status.ready;

/** Upgrade the way talosctl ≥ 1.13 does: ImageService/Pull, then LifecycleService/Upgrade; no reboot. */
async function lifecycleUpgrade(ref: string) {
  const pull = await admin.stream(ImageService, "Pull", ImageServicePullRequestSchema, ImageServicePullResponseSchema, { containerd, imageRef: ref });
  const up = await admin.stream(LifecycleService, "Upgrade", LifecycleServiceUpgradeRequestSchema, LifecycleServiceUpgradeResponseSchema, { containerd, source: { imageName: ref } });
  const messages = up.filter((r) => r.progress?.response.case === "message").map((r) => r.progress!.response.value as string);
  const last = up[up.length - 1]?.progress?.response;
  return { pull, messages, exitCode: last?.case === "exitCode" ? last.value : undefined };
}

const taskName = (e: m.Event) => (e.data?.typeUrl === "talos/runtime/machine.TaskEvent" ? fromBinary(m.TaskEventSchema, e.data.value).task : undefined);

/** Tasks reported with `actor` until the (simulated) reboot drops the connection. */
function followTasks(actor: string): Promise<string[]> {
  const tasks: string[] = [];
  return admin
    .stream(MachineService, "Events", m.EventsRequestSchema, m.EventSchema, { tailEvents: -1, withActorId: actor }, { deadlineMs: 15_000, onMessage: (e) => void (taskName(e) && tasks.push(taskName(e)!)) })
    .then(
      () => tasks,
      () => tasks,
    );
}

/** Task names in this boot's event history. */
async function bootTasks(): Promise<string[]> {
  const history: m.Event[] = [];
  await admin.stream(MachineService, "Events", m.EventsRequestSchema, m.EventSchema, { tailEvents: -1 }, { deadlineMs: 1000, onMessage: (e) => void history.push(e) }).catch(() => undefined);
  return history.map(taskName).filter((t): t is string => !!t);
}

const reboot = () => eventually(() => admin.unary(MachineService, "Reboot", m.RebootRequestSchema, m.RebootResponseSchema, {}), 10_000);

async function waitBooted(slot: string, version?: string, timeoutMs = 20_000) {
  await eventually(async () => {
    expect(booted()?.slot).toBe(slot);
    if (version) expect(booted()?.osVersion).toBe(version);
    expect(ready()).toBe(true);
    expect(booted()?.trial).toBe(false);
  }, timeoutMs);
}

beforeAll(async () => {
  if (missing.length > 0) return;
  rig = await startInstallRig();
  const cfgs = await generateConfigs({ clusterName: "demo", endpoint: "https://127.0.0.1:6443", installDisk: rig.disk, talosVersion: "v1.13" });
  worker = cfgs.controlplane; // a worker waits for trustd to issue its API certificate; a control plane has one at once
  for (const [tag, f] of [
    ["v2", { version: "v2.0.0" }],
    ["v3-crash", { version: "v3.0.0", fail: "crash" as const }],
    ["v4-not-ready", { version: "v4.0.0", fail: "not-ready" as const }],
    ["v5", { version: "v5.0.0" }],
    ["v6-corrupt", { version: "v6.0.0", corrupt: true }],
  ] as const) {
    refs[tag] = await addInstallerImage(rig.layout, tag, f);
  }
  admin = new TestClient(rig.address, mtls(...(Object.values(talosconfigCreds(cfgs.talosconfig)) as [string, string, string])));
}, 120_000);

afterAll(async () => {
  admin?.close();
  await rig?.stop();
});

describe.skipIf(missing.length > 0)("OS lifecycle on a disk-image file", () => {
  it("lists the image files as disks in maintenance mode", async () => {
    const c = insecure();
    const res = await c.unary(StorageService, "Disks", EmptySchema, DisksResponseSchema, {});
    c.close();
    const disk = res.messages[0].disks.find((d) => d.deviceName === rig.disk);
    expect(disk).toMatchObject({ size: 4n * 2n ** 30n, model: "disk image file", systemDisk: false });
    expect(res.messages[0].disks.map((d) => d.deviceName).sort()).toEqual([rig.dataDisk, rig.disk].sort());
  });

  it("refuses an install disk file that does not exist, and stays in maintenance", async () => {
    const c = insecure();
    const gone = join(rig.dir, "missing.img");
    await expect(apply(c, worker.replace(`disk: ${rig.disk}`, `disk: ${gone}`))).rejects.toMatchObject({
      code: status.FAILED_PRECONDITION,
      details: expect.stringContaining(`"${gone}" does not exist: local mode installs into an existing disk-image file (create one first, e.g. truncate -s 4G ${gone})`),
    });
    c.close();
    expect(rig.node.node.mode).toBe("maintenance");
  });

  it("a disk selector that matches nothing lists every candidate and why", async () => {
    const c = insecure();
    const cfg = worker.replace(`        disk: ${rig.disk}\n`, '        diskSelector:\n            size: ">= 1TB"\n');
    const err = await apply(c, cfg).catch((e) => e);
    c.close();
    expect(err.code).toBe(status.FAILED_PRECONDITION);
    expect(err.details).toContain('no disk matches machine.install.diskSelector {size: ">= 1TB"}. Candidates:');
    expect(err.details).toContain(`- ${rig.disk}: size 4.3 GB (4294967296 bytes)`);
    expect(err.details).toContain("not chosen: size 4294967296 bytes is not >= 1000000000000 bytes (>= 1TB)");
    expect(err.details).toContain(`- ${rig.dataDisk}: size 67 MB`);
    expect(rig.node.node.mode).toBe("maintenance");
  });

  it("installs into the image on the first apply, slot A blessed", async () => {
    const c = insecure();
    await apply(c, worker);
    c.close();
    expect(rig.node.node.mode).toBe("configured");
    const layout = await readLayout(rig.disk);
    expect(layout.partitions.map((p) => p.name)).toEqual(rig.install.arch === "amd64" ? ["EFI", "BIOS", "BOOT-A", "BOOT-B", "META", "STATE", "EPHEMERAL"] : ["EFI", "BOOT-A", "BOOT-B", "META", "STATE", "EPHEMERAL"]);
    expect(await entries()).toEqual(["a.conf"]);
    expect(await slotState()).toMatchObject({ lastKnownGood: "A", record: { result: "installed", to: "A" } });
    expect(booted()).toMatchObject({ slot: "A", trial: false });
    expect(resource("MetaKeys.runtime.talos.dev", "0xa0")?.spec).toEqual({ value: "A" });
    await eventually(async () => {
      const res = await admin.unary(StorageService, "Disks", EmptySchema, DisksResponseSchema, {});
      expect(res.messages[0].disks.find((d) => d.deviceName === rig.disk)?.systemDisk).toBe(true);
    }, 10_000);
  });

  it("upgrades through ImageService/Pull + LifecycleService/Upgrade, then boots B and blesses it when ready", async () => {
    const { pull, messages, exitCode } = await lifecycleUpgrade(refs.v2);
    const name = pull[pull.length - 1].response;
    expect(name.case).toBe("name");
    expect(name.value).toMatch(new RegExp(`^oci:${rig.layout}@sha256:[0-9a-f]{64}$`));
    expect(exitCode).toBe(0);
    expect(messages.join("\n")).toContain("slot B holds v2.0.0; it boots next with 2 tries, slot A stays the fallback");
    expect(await entries()).toEqual(["a.conf", "b+2.conf"]);
    expect(resource("MetaKeys.runtime.talos.dev", "0xa1")?.spec).toEqual({ value: "B" });

    await reboot();
    await waitBooted("B", "v2.0.0");
    await eventually(async () => expect(await entries()).toEqual(["a.conf", "b.conf"]), 5000);
    expect(await slotState()).toMatchObject({ lastKnownGood: "B", pending: undefined, record: { from: "A", to: "B", result: "success", osVersion: "v2.0.0" } });
  });

  it("refuses bad Lifecycle/Image requests, and reports a payload that fails verification as exit code 1", async () => {
    await expect(
      admin.stream(LifecycleService, "Upgrade", LifecycleServiceUpgradeRequestSchema, LifecycleServiceUpgradeResponseSchema, { containerd, source: { imageName: "" } }),
    ).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: "installer image name is required" });
    await expect(
      admin.stream(ImageService, "Pull", ImageServicePullRequestSchema, ImageServicePullResponseSchema, { containerd: { driver: ContainerDriver.CONTAINERD, namespace: ContainerdNamespace.NS_CRI }, imageRef: refs.v2 }),
    ).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: "cannot use CRI namespace with containerd driver" });
    await expect(
      admin.stream(ImageService, "Pull", ImageServicePullRequestSchema, ImageServicePullResponseSchema, { containerd, imageRef: `oci:${rig.layout}:nope` }),
    ).rejects.toMatchObject({ code: status.NOT_FOUND, details: expect.stringContaining('error pulling image: OCI layout') });
    const bad = await lifecycleUpgrade(refs["v6-corrupt"]);
    expect(bad.exitCode).toBe(1);
    expect(bad.messages.at(-1)).toMatch(/^error: installer file vmlinuz has sha256 [0-9a-f]{64}, manifest.json says [0-9a-f]{64}$/);
    expect(await entries()).toEqual(["a.conf", "b.conf"]); // nothing was written
  });

  it("rolls back one step to A; a second rollback in a row is refused", async () => {
    await eventually(() => admin.unary(MachineService, "Rollback", m.RollbackRequestSchema, m.RollbackResponseSchema, {}), 10_000);
    await waitBooted("A");
    expect(await slotState()).toMatchObject({ lastKnownGood: "A", record: { from: "B", to: "A", result: "rolled-back" } });
    await expect(admin.unary(MachineService, "Rollback", m.RollbackRequestSchema, m.RollbackResponseSchema, {})).rejects.toMatchObject({
      code: status.FAILED_PRECONDITION,
      details: expect.stringMatching(/^cannot roll back twice in a row: the last operation already rolled back from slot B to slot A .*Upgrade instead\.$/),
    });
  });

  it("legacy MachineService/Upgrade to a version whose agent crashes falls back to A by itself", async () => {
    const res = await admin.unary(MachineService, "Upgrade", m.UpgradeRequestSchema, m.UpgradeResponseSchema, { image: refs["v3-crash"] });
    expect(res.messages[0].ack).toBe("Upgrade request received");
    const actor = res.messages[0].actorId;
    expect(actor).toMatch(/^[0-9a-f-]{36}$/);
    const actorTasks = followTasks(actor);
    await eventually(async () => {
      expect(booted()?.attempts.map((a) => `${a.slot}:${a.failed ?? "up"}`)).toEqual(["B:crash", "B:crash", "A:up"]);
      expect(ready()).toBe(true);
      expect(resource("Diagnostics.runtime.talos.dev", "upgrade-fallback")).toBeDefined();
    }, 20_000);
    expect(await actorTasks).toEqual(expect.arrayContaining(["stopServicesForUpgrade", "writeInactiveSlot"]));
    const diag = resource("Diagnostics.runtime.talos.dev", "upgrade-fallback")!.spec as { message: string; details: string[] };
    expect(diag.message).toBe("upgrade to v3.0.0 in slot B did not come up; the machine fell back to slot A");
    expect(diag.details[0]).toBe("slot B (v3.0.0) did not become ready; slot A booted instead");
    expect(await slotState()).toMatchObject({ lastKnownGood: "A", pending: undefined, record: { to: "B", result: "failed", image: refs["v3-crash"] } });
    expect(await entries()).toEqual(["a.conf", "b+0-2.conf"]);
    expect(await bootTasks()).toContain("upgradeFallback");
  });

  it("a version that never becomes ready spends its tries and falls back", async () => {
    const { exitCode } = await lifecycleUpgrade(refs["v4-not-ready"]);
    expect(exitCode).toBe(0);
    expect(resource("Diagnostics.runtime.talos.dev", "upgrade-fallback")).toBeUndefined(); // the new upgrade replaced the failed record
    await reboot();
    await eventually(async () => {
      expect(booted()?.slot).toBe("A");
      expect(ready()).toBe(true);
      expect((await slotState()).record).toMatchObject({ to: "B", osVersion: "v4.0.0", result: "failed" });
      expect(resource("Diagnostics.runtime.talos.dev", "upgrade-fallback")).toBeDefined();
    }, 30_000);
    expect(await entries()).toEqual(["a.conf", "b+0-2.conf"]);
  });

  it("a staged upgrade is written at the next boot and comes up in B", async () => {
    const res = await admin.unary(MachineService, "Upgrade", m.UpgradeRequestSchema, m.UpgradeResponseSchema, { image: refs.v5, stage: true });
    expect(res.messages[0].ack).toBe("Upgrade request received");
    await waitBooted("B", "v5.0.0");
    expect((await slotState()).record).toMatchObject({ from: "A", to: "B", result: "success", osVersion: "v5.0.0" });
    expect(resource("Diagnostics.runtime.talos.dev", "upgrade-fallback")).toBeUndefined();
    expect(resource("MetaKeys.runtime.talos.dev", "0x07")).toBeUndefined(); // staged tags are consumed
  });

  it("writes and deletes META keys", async () => {
    await admin.unary(MachineService, "MetaWrite", m.MetaWriteRequestSchema, m.MetaWriteResponseSchema, { key: 0x0c, value: new TextEncoder().encode("hello") });
    expect(resource("MetaKeys.runtime.talos.dev", "0x0c")?.spec).toEqual({ value: "hello" });
    await admin.unary(MachineService, "MetaDelete", m.MetaDeleteRequestSchema, m.MetaDeleteResponseSchema, { key: 0x0c });
    expect(resource("MetaKeys.runtime.talos.dev", "0x0c")).toBeUndefined();
    await expect(admin.unary(MachineService, "MetaDelete", m.MetaDeleteRequestSchema, m.MetaDeleteResponseSchema, { key: 0x0c })).rejects.toMatchObject({
      code: status.NOT_FOUND,
      details: "meta key not found",
    });
    await expect(admin.unary(MachineService, "MetaWrite", m.MetaWriteRequestSchema, m.MetaWriteResponseSchema, { key: 300, value: new Uint8Array() })).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: "key must be a uint8",
    });
  });

  it("validates reset requests like upstream", async () => {
    const reset = (r: MessageInitShape<typeof m.ResetRequestSchema>) => admin.unary(MachineService, "Reset", m.ResetRequestSchema, m.ResetResponseSchema, r);
    await expect(reset({ userDisksToWipe: [rig.disk] })).rejects.toMatchObject({ details: `reset user disk failed: device ${rig.disk} is the system disk` });
    await expect(reset({ userDisksToWipe: ["/dev/nope"] })).rejects.toMatchObject({ details: "reset user disk failed: device /dev/nope wasn't found" });
    await expect(reset({ mode: m.ResetRequest_WipeMode.SYSTEM_DISK, userDisksToWipe: [rig.dataDisk] })).rejects.toMatchObject({
      details: "reset failed: invalid input, wipe mode SYSTEM_DISK doesn't support UserDisksToWipe parameter",
    });
    await expect(reset({ systemPartitionsToWipe: [{ label: "BOOT-A", wipe: true }] })).rejects.toMatchObject({ code: status.INVALID_ARGUMENT });
  });

  it("reset wiping STATE returns to maintenance but keeps the installed OS", async () => {
    const res = await admin.unary(MachineService, "Reset", m.ResetRequestSchema, m.ResetResponseSchema, {
      graceful: true,
      reboot: true,
      mode: m.ResetRequest_WipeMode.SYSTEM_DISK,
      systemPartitionsToWipe: [{ label: "STATE", wipe: true }],
    });
    expect(res.messages[0].actorId).toMatch(/^[0-9a-f-]{36}$/);
    await eventually(async () => expect(rig.node.node.mode).toBe("maintenance"), 15_000);
    await eventually(async () => expect(rig.node.node.status.current.stage).toBe("maintenance"), 5000);
    expect(existsSync(join(rig.stateDir, "config.yaml"))).toBe(false);
    expect(booted()).toMatchObject({ slot: "B", osVersion: "v5.0.0" });
    // applying again does not reinstall: the slots stay as they were
    const c = insecure();
    await eventually(() => apply(c, worker), 10_000);
    c.close();
    expect(rig.node.node.mode).toBe("configured");
    expect(await entries()).toEqual(["a.conf", "b.conf"]);
  });

  it("reset of the whole system disk wipes the image and comes back in maintenance mode", async () => {
    await eventually(() => admin.unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {}), 10_000);
    const res = await admin.unary(MachineService, "Reset", m.ResetRequestSchema, m.ResetResponseSchema, { graceful: true, reboot: true, mode: m.ResetRequest_WipeMode.ALL });
    const actor = res.messages[0].actorId;
    // talosctl reset waits for TaskEvent stopAllServices with its actor id
    expect(await followTasks(actor)).toEqual(expect.arrayContaining(["stopAllServices", "resetSystemDisk"]));
    await eventually(async () => {
      expect(rig.node.node.mode).toBe("maintenance");
      expect(rig.node.node.status.current.stage).toBe("maintenance");
      await expect(readLayout(rig.disk)).rejects.toThrow(/no GPT header found/);
    }, 15_000);
    expect(existsSync(join(rig.stateDir, "system-disk.json"))).toBe(false);
    expect(booted()).toBeUndefined();
    expect(actor).toMatch(/^[0-9a-f-]{36}$/);
    // maintenance again: talosctl reset's post-check calls Disks over an insecure connection
    const c = insecure();
    const disks = await eventually(() => c.unary(StorageService, "Disks", EmptySchema, DisksResponseSchema, {}), 10_000);
    c.close();
    expect(disks.messages[0].disks.find((d) => d.deviceName === rig.disk)?.systemDisk).toBe(false);
  });
});
