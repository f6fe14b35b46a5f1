/**
 * The install/upgrade/rollback/reset machinery as one object the Node hooks and the API handlers call.
 * Disk-writing operations are mutually exclusive ("another installation/upgrade is already in progress").
 * Sequences (upgrade, stageUpgrade, reset) run through Node.runSequence, so they report Sequence/Phase/Task
 * events with the caller's actor id and end in the Node's (simulated, in local mode) reboot.
 */
import { join } from "node:path";
import type { Arch } from "../../boot/layout.js";
import { readLayout } from "../../boot/layout.js";
import { rollback as rollbackSlots, readSlotState, DEFAULT_TRIES, type UpgradeRecord } from "../../boot/slots.js";
import { discoverDisks, type DiskInfo } from "../../host/disks.js";
import { hostFiles } from "../../host/files/index.js";
import type { MachineConfig } from "../../machinery/config/index.js";
import { registriesOf } from "../../machinery/config/registries.js";
import { ApiError, Code, alreadyExists, failedPrecondition, invalidArgument } from "../../machinery/errors.js";
import { machinedVersion } from "../../machinery/version.js";
import type { Ctr } from "../../supervisor/index.js";
import type { Node } from "../node.js";
import { SequenceReporter } from "../sequence.js";
import { BootFlow } from "./boot.js";
import { chooseInstallDisk, installCandidates, installSystem, localSkipReason, type InstallSpec } from "./install.js";
import { readInstaller, unpackInstaller, verifyInstaller, writeLocalPayload, type InstallerPayload } from "./payload.js";
import { publishDiagnostics, publishMetaKeys } from "./publish.js";
import { ImageManager } from "../images/manager.js";
import type { ImagePuller, PulledImage } from "../images/pull.js";
import { runReset, validateReset, type ResetRequestLike } from "./reset-flow.js";
import { SystemDisk, SystemDiskRecord } from "./system-disk.js";
import { rebootNow, reporter, type Reporter } from "./tasks.js";
import { checkNoTrial, recordStagedUpgrade, takeStagedUpgrade, writeInactiveSlot } from "./upgrade.js";

export interface InstallManagerOptions {
  node: Node;
  stateDir: string;
  arch?: Arch;
  /** Disk-image files offered by Storage Disks and as install candidates (local mode). */
  imageFiles?: string[];
  /** Discovery roots (tests point them at an empty folder so host disks stay out). */
  sysRoot?: string;
  devRoot?: string;
  /** The node's image service; installer images are pulled through it. Built from ctr/insecureRegistries/fetch when absent. */
  images?: ImageManager;
  /** containerd access for pulls (the node's own containerd when it runs). */
  ctr?: () => Ctr | undefined;
  /** The CRI containerd where the node runs Kubernetes (the image service's CRI store). */
  criCtr?: () => Ctr | undefined;
  insecureRegistries?: string[];
  /**
   * Folders outside the state folder that EPHEMERAL holds in this mode (a sandbox keeps etcd's data in its own
   * /var/lib/etcd): a reset that wipes EPHEMERAL empties them too.
   */
  ephemeralDirs?: string[];
  /** Graceful reset of a control plane: leave etcd first. */
  leaveEtcd?: () => Promise<void>;
  /** Boot tries granted to a new version (default 3). */
  bootTries?: number;
  /** A trial boot that is not ready within this reboots (default 10 minutes). */
  readyTimeoutMs?: number;
  fetch?: typeof fetch;
}

export interface LegacyUpgradeRequest {
  image: string;
  stage: boolean;
  force: boolean;
  preserve: boolean;
}

const BUSY = "another installation/upgrade is already in progress";

export class InstallManager {
  readonly images: ImageManager;
  readonly puller: ImagePuller;
  readonly boot: BootFlow;
  readonly arch: Arch;
  private readonly record: SystemDiskRecord;
  private busy: string | undefined;

  constructor(private readonly o: InstallManagerOptions) {
    this.arch = o.arch ?? (process.arch === "arm64" ? "arm64" : "amd64");
    this.record = new SystemDiskRecord(o.stateDir);
    this.images =
      o.images ??
      new ImageManager({
        cacheDir: o.stateDir,
        arch: this.arch,
        ctr: o.ctr,
        criCtr: o.criCtr,
        insecureRegistries: o.insecureRegistries,
        fetch: o.fetch,
        registries: () => registriesOf(o.node.activeConfig),
      });
    this.puller = this.images.puller;
    this.boot = new BootFlow({
      node: o.node,
      local: o.node.local,
      readyTimeoutMs: o.readyTimeoutMs ?? 10 * 60_000,
      systemDisk: () => this.systemDisk(),
      applyStagedUpgrade: (disk) => this.applyStagedUpgrade(disk),
      publish: (disk, extra) => this.publish(disk, extra),
    });
  }

  /** The Node's install hooks: install on the first apply in maintenance, boot bookkeeping at every boot. */
  hooks(): { beforeBoot(): Promise<void>; onFirstApply(cfg: MachineConfig): Promise<void> } {
    return { beforeBoot: () => this.boot.onBoot(), onFirstApply: (cfg) => this.installOnApply(cfg) };
  }

  private get node(): Node {
    return this.o.node;
  }

  private get tries(): number {
    return this.o.bootTries ?? DEFAULT_TRIES;
  }

  private say = (m: string) => this.node.log.info(m);

  /** Takes the disk-writing lock; the returned function releases it. */
  private lock(what: string): () => void {
    if (this.busy) throw failedPrecondition(BUSY);
    this.busy = what;
    return () => {
      if (this.busy === what) this.busy = undefined;
    };
  }

  // ---------------------------------------------------------------- disks

  /** The installed system disk, or undefined (not installed, or the disk was wiped behind our back). */
  async systemDisk(): Promise<SystemDisk | undefined> {
    if (this.node.local) {
      const path = await this.record.get();
      if (!path) return undefined;
      return SystemDisk.open(path).catch((err) => {
        this.node.log.warn({ err }, `recorded system disk ${path} is unusable; treating the machine as not installed`);
        return undefined;
      });
    }
    for (const d of await discoverDisks({ sysRoot: this.o.sysRoot, devRoot: this.o.devRoot })) {
      const layout = await readLayout(d.devPath).catch(() => undefined);
      if (layout?.machined) return SystemDisk.open(d.devPath);
    }
    return undefined;
  }

  /** Storage Disks: block devices plus the disk-image files we know of; the system disk is flagged. */
  async disks(): Promise<{ disk: DiskInfo; system: boolean }[]> {
    const sys = await this.systemDisk();
    const files = new Set(this.o.imageFiles ?? []);
    if (sys && this.node.local) files.add(sys.path);
    const all = await discoverDisks({ sysRoot: this.o.sysRoot, devRoot: this.o.devRoot, files: [...files] });
    return all.map((disk) => ({ disk, system: sys?.path === disk.devPath }));
  }

  /** pull → unpack → verify, reported as tasks. */
  /** `cfg`: the config whose registry settings apply (the one being applied on a first install; else the active one). */
  private async fetchInstaller(ref: string, namespace: string, rep: Reporter, dirName: string, cfg = this.node.activeConfig): Promise<InstallerPayload> {
    let pulled: PulledImage | undefined;
    let payload: InstallerPayload | undefined;
    await rep.phase("pull", [
      [
        "pullInstallerImage",
        async () => {
          pulled = await this.puller.pull({ ref, namespace, registries: registriesOf(cfg) });
          rep.say(`pulled ${pulled.name} (via ${pulled.via})`);
        },
      ],
    ]);
    await rep.phase("verify", [
      [
        "verifyInstallerImage",
        async () => {
          payload = await unpackInstaller(pulled!, this.arch, join(this.o.stateDir, "installer", dirName));
          await verifyInstaller(payload.dir, payload.manifest);
          rep.say(`verified installer ${payload.manifest.version}: kernel ${payload.manifest.kernel.size} bytes, initramfs ${payload.manifest.initramfs.size} bytes, sha256 match`);
        },
      ],
    ]);
    return payload!;
  }

  private async publish(disk: SystemDisk | undefined, extra: { noBoot?: string } = {}): Promise<void> {
    if (!disk) {
      publishMetaKeys(this.node.state, []);
      publishDiagnostics(this.node.state, extra);
      return;
    }
    const { tags, record } = await disk.withMeta(async (m) => ({ tags: m.list(), record: readSlotState(m).record }));
    publishMetaKeys(this.node.state, tags);
    publishDiagnostics(this.node.state, { record, noBoot: extra.noBoot });
  }

  // ---------------------------------------------------------------- install

  private installSpec(cfg: MachineConfig | undefined): InstallSpec & { image?: string } {
    const i = cfg?.machine?.install;
    return { disk: i?.disk || undefined, diskSelector: i?.diskSelector, wipe: i?.wipe, extraKernelArgs: i?.extraKernelArgs ?? [], image: i?.image };
  }

  /** Node.installer hook: the first config in maintenance mode installs the OS; throwing refuses the apply. */
  async installOnApply(cfg: MachineConfig): Promise<void> {
    const spec = this.installSpec(cfg);
    if (await this.systemDisk()) {
      this.node.log.info("the machine is already installed; the config is applied without reinstalling");
      return;
    }
    if (this.node.local) {
      const skip = await localSkipReason(spec, this.o.imageFiles ?? []);
      if (skip) {
        this.node.log.info(`not installing: ${skip}`);
        return;
      }
    } else if (!spec.disk && !spec.diskSelector) {
      return;
    }
    const release = this.lock("install");
    const seq = new SequenceReporter(this.node.events, "install", "");
    seq.start();
    this.node.status.setStage("installing");
    try {
      const target = chooseInstallDisk(await installCandidates(spec, this.discovery()), spec, this.node.local);
      const rep = reporter(seq, this.say);
      const payload = this.node.local
        ? await writeLocalPayload(join(this.o.stateDir, "installer", "local"), machinedVersion, this.arch)
        : await this.fetchInstaller(spec.image ?? "", "system", rep, "current", cfg);
      await this.installOnto(target, payload, spec, rep);
      seq.stop();
    } catch (err) {
      seq.stop((err as Error).message);
      if (err instanceof ApiError) throw err;
      throw failedPrecondition(`install failed: ${(err as Error).message}`);
    } finally {
      this.node.status.setStage("maintenance");
      release();
    }
  }

  private discovery() {
    return { sysRoot: this.o.sysRoot, devRoot: this.o.devRoot, files: this.o.imageFiles };
  }

  private async installOnto(target: DiskInfo, payload: InstallerPayload, spec: InstallSpec, rep: Reporter): Promise<UpgradeRecord> {
    const { disk, record } = await installSystem(target, payload, { arch: this.arch, spec, report: rep });
    if (this.node.local) await this.record.set(disk.path);
    this.boot.installed("A", payload.manifest.version);
    await this.publish(disk);
    return record;
  }

  /** LifecycleService/Install: image + disk given explicitly. Returns the installer's exit code. */
  async install(image: string, diskPath: string, namespace: string, say: (m: string) => void): Promise<number> {
    if (this.busy) throw failedPrecondition(BUSY);
    if (await this.systemDisk()) throw alreadyExists("machine is already installed");
    if (!image) throw invalidArgument("installer image name is required");
    if (!diskPath) throw invalidArgument("destination disk is required");
    const target = await hostFiles.realpath(diskPath).catch((err: Error) => {
      throw invalidArgument(`invalid disk path: ${err.message}`);
    });
    const release = this.lock("install");
    try {
      const spec: InstallSpec = { disk: target, wipe: true, extraKernelArgs: this.installSpec(this.node.activeConfig).extraKernelArgs };
      const rep = reporter(new SequenceReporter(this.node.events, "install", ""), say);
      const payload = await this.fetchInstaller(image, namespace, rep, "current");
      await this.installOnto(chooseInstallDisk(await installCandidates(spec, this.discovery()), spec, this.node.local), payload, spec, rep);
      say("installation completed");
      return 0;
    } catch (err) {
      say(`error: ${(err as Error).message}`);
      this.node.log.error({ err }, "installation failed");
      return 1;
    } finally {
      release();
    }
  }

  // ---------------------------------------------------------------- upgrade

  /** LifecycleService/Upgrade: pull, verify, write the inactive slot; the client reboots separately. */
  async upgradeNow(image: string, namespace: string, say: (m: string) => void): Promise<number> {
    if (this.busy) throw failedPrecondition(BUSY);
    const disk = await this.systemDisk();
    if (!disk) throw failedPrecondition("machine is not installed");
    if (!image) throw invalidArgument("installer image name is required");
    const release = this.lock("upgrade");
    try {
      const rep = reporter(new SequenceReporter(this.node.events, "upgrade", ""), say);
      await checkNoTrial(disk);
      const payload = await this.fetchInstaller(image, namespace, rep, "current");
      const rec = await writeInactiveSlot(disk, payload, { tries: this.tries, extraKernelArgs: this.installSpec(this.node.activeConfig).extraKernelArgs ?? [], report: rep });
      await this.publish(disk);
      say(`upgrade to ${rec.osVersion} written to slot ${rec.to}; it starts at the next reboot`);
      return 0;
    } catch (err) {
      say(`error: ${(err as Error).message}`);
      this.node.log.error({ err }, "upgrade failed");
      return 1;
    } finally {
      release();
    }
  }

  /**
   * MachineService/Upgrade (legacy): the image is pulled and verified before the reply (as upstream validates
   * it), then the upgrade sequence stops services, writes the slot and reboots. `stage` only records it.
   */
  async upgradeLegacy(req: LegacyUpgradeRequest, actorId: string): Promise<void> {
    const disk = await this.systemDisk();
    if (!disk) throw failedPrecondition("Talos is not installed");
    if (!req.image) throw invalidArgument("installer image name is required");
    const release = this.lock("upgrade");
    let started = false;
    try {
      await checkNoTrial(disk).catch((err: Error) => {
        throw failedPrecondition(err.message);
      });
      const payload = await this.fetchInstaller(req.image, "system", reporter(undefined, this.say), req.stage ? "staged" : "current").catch((err: Error) => {
        throw new ApiError(Code.Unknown, `error validating installer image ${JSON.stringify(req.image)}: ${err.message}`);
      });
      const extraKernelArgs = this.installSpec(this.node.activeConfig).extraKernelArgs ?? [];
      if (req.stage) {
        await recordStagedUpgrade(disk, { image: req.image, payloadDir: payload.dir, tries: this.tries, extraKernelArgs, staged: new Date().toISOString() });
        await this.publish(disk);
        this.node.runSequence("stageUpgrade", actorId, async (seq) => {
          this.node.status.setStage("upgrading", actorId);
          release();
          await seq.phase("stopEverything", [["stopAllServices", () => this.node.stopServices()]]);
          await rebootNow(this.node);
        });
      } else {
        this.node.runSequence("upgrade", actorId, async (seq) => {
          this.node.status.setStage("upgrading", actorId);
          const rep = reporter(seq, this.say);
          try {
            await seq.phase("stopServices", [["stopServicesForUpgrade", () => this.node.stopServices()]]);
            await writeInactiveSlot(disk, payload, { tries: this.tries, extraKernelArgs, report: rep });
          } catch (err) {
            // like a failed Talos upgrade: report it and reboot into the unchanged last-known-good slot
            this.node.log.error({ err }, "upgrade failed; rebooting into the current slot");
            seq.stop((err as Error).message);
          } finally {
            release();
          }
          await rebootNow(this.node);
        });
      }
      started = true;
    } finally {
      if (!started) release();
    }
  }

  /** Boot hook: a staged upgrade found in META is written now, before the bootloader (model) runs. */
  private async applyStagedUpgrade(disk: SystemDisk): Promise<void> {
    let staged;
    try {
      staged = await takeStagedUpgrade(disk);
    } catch (err) {
      this.node.log.error({ err }, "staged upgrade dropped");
      return;
    }
    if (!staged) return;
    const seq = new SequenceReporter(this.node.events, "boot", "");
    try {
      const payload = await readInstaller(staged.payloadDir, this.arch, staged.image);
      await verifyInstaller(payload.dir, payload.manifest);
      const rec = await writeInactiveSlot(disk, payload, { tries: staged.tries, extraKernelArgs: staged.extraKernelArgs, report: reporter(seq, this.say) });
      this.node.log.info({ record: rec }, `staged upgrade to ${rec.osVersion} written to slot ${rec.to}`);
    } catch (err) {
      this.node.log.error({ err }, `staged upgrade of ${staged.image} failed; booting the current slot`);
    }
  }

  // ---------------------------------------------------------------- rollback / reset / META

  async rollback(actorId: string): Promise<UpgradeRecord> {
    const disk = await this.systemDisk();
    if (!disk) throw failedPrecondition("system disk not found");
    const release = this.lock("rollback");
    try {
      const rec = await disk.withCtx((ctx) => rollbackSlots(ctx));
      this.node.log.info({ record: rec }, `rollback: slot ${rec.to} (${rec.osVersion}) boots next`);
      await this.publish(disk);
      this.node.reboot(actorId);
      return rec;
    } finally {
      release();
    }
  }

  async reset(req: ResetRequestLike, actorId: string): Promise<void> {
    const disk = await this.systemDisk();
    const disks = await this.disks();
    const plan = validateReset(req, disks);
    const release = this.lock("reset");
    try {
      this.node.runSequence("reset", actorId, (seq) =>
        runReset(seq, plan, {
          node: this.node,
          stateDir: this.o.stateDir,
          ephemeralDirs: this.o.ephemeralDirs ?? [],
          disk,
          leaveEtcd: this.o.leaveEtcd,
          forgetSystemDisk: async () => {
            await this.record.clear();
            this.boot.forget();
          },
          release,
        }),
      );
    } catch (err) {
      release();
      throw err;
    }
  }

  async metaWrite(key: number, value: Uint8Array): Promise<void> {
    await this.withMetaKey(key, async (disk) => {
      await disk.withMeta(async (m) => {
        try {
          m.set(key, value);
        } catch {
          throw new ApiError(Code.ResourceExhausted, "meta write failed");
        }
        await m.flush();
      });
    });
  }

  async metaDelete(key: number): Promise<void> {
    await this.withMetaKey(key, async (disk) => {
      await disk.withMeta(async (m) => {
        if (!m.delete(key)) throw new ApiError(Code.NotFound, "meta key not found");
        await m.flush();
      });
    });
  }

  private async withMetaKey(key: number, fn: (disk: SystemDisk) => Promise<void>): Promise<void> {
    if (!Number.isInteger(key) || key < 0 || key > 255) throw invalidArgument("key must be a uint8");
    if (key === 0) throw invalidArgument("META key 0 is reserved: it ends the record list");
    const disk = await this.systemDisk();
    if (!disk) throw failedPrecondition("META is not available: the machine is not installed");
    await fn(disk);
    await this.publish(disk);
  }
}
