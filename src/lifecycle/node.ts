/**
 * The node: which mode it is in (maintenance or configured), its active config, its stage, and the
 * sequences that change them (apply, reboot, shutdown). In local mode reboots are simulated: the event
 * log restarts, the boot id changes and the boot sequence runs again, so talosctl's trackers complete.
 *
 * The active config is published as the MachineConfig resource (parsed once, here); everything the config
 * decides (network, certificates, services) follows that resource through controllers. The node itself only
 * stores the config and runs sequences, with the pieces it needs (services, install, power) given once, to its
 * constructor.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { loadConfig, type MachineConfig } from "../machinery/config/index.js";
import { admitted } from "../machinery/config/admission.js";
import { newResource } from "../machinery/resources/resource.js";
import { machineConfigPtr, machineTypePtr, YAML_SPEC_ANNOTATION } from "../machinery/resources/types/config.js";
import { RUNTIME_NS, VersionType, type UnmetCondition } from "../machinery/resources/types/runtime.js";
import { API_TAG, OS_NAME } from "../machinery/version.js";
import { failedPrecondition } from "../machinery/errors.js";
import type { EventBus } from "../state/events.js";
import type { State } from "../state/types.js";
import { ConfigApplier } from "./apply.js";
import { ConfigStore } from "./config-store.js";
import { MachineStatusTracker } from "./stage-tracker.js";
import { SequenceReporter } from "./sequence.js";

/** The system services as the node's sequences see them (lifecycle/services.ts). */
export interface NodeServicesHooks {
  stopAll(): Promise<void>;
  onReadiness(cb: (reason: string | undefined) => void): void;
}

/** Install and boot-slot bookkeeping (lifecycle/install). */
export interface NodeInstallHooks {
  /** Every boot, before the config loads: which slot booted, staged upgrades, simulated firmware in local mode. */
  beforeBoot(): Promise<void>;
  /** The first config in maintenance mode installs the OS; a failed install refuses the apply. */
  onFirstApply(cfg: MachineConfig): Promise<void>;
}

/** A real machine's power (PID 1): absent in local mode, where reboots are simulated. */
export interface NodePower {
  reboot(): Promise<void>;
  powerOff(): Promise<void>;
}

export interface NodeOptions {
  stateDir: string;
  /** True when not PID 1: reboots are simulated and the host is only observed. */
  local: boolean;
  log: Logger;
  state: State;
  events: EventBus;
  services?: NodeServicesHooks;
  install?: NodeInstallHooks;
  power?: NodePower;
}

export type NodeMode = "maintenance" | "configured";

const CONFIG_OWNER = "";
/** How long a simulated reboot keeps the node down (local mode). */
export const SIMULATED_REBOOT_MS = Number(process.env.MACHINED_SIMULATED_REBOOT_MS ?? 2500);
const MACHINE_TYPE_OWNER = "config.MachineTypeController";

export class Node {
  readonly store: ConfigStore;
  readonly status: MachineStatusTracker;
  readonly applier: ConfigApplier;
  readonly log: Logger;
  readonly state: State;
  readonly events: EventBus;
  readonly local: boolean;
  bootId = randomUUID();
  private config: MachineConfig | undefined;
  private tryTimer: NodeJS.Timeout | undefined;
  private tryPrevious: MachineConfig | undefined;
  private readonly restartCbs = new Set<() => void | Promise<void>>();
  private readonly install?: NodeInstallHooks;
  private readonly power?: NodePower;
  private readonly services?: NodeServicesHooks;
  private extraConditions = new Map<string, string>();
  private controllerConditions: UnmetCondition[] = [];
  private busySequence: string | undefined;

  constructor(opts: NodeOptions) {
    this.log = opts.log;
    this.state = opts.state;
    this.events = opts.events;
    this.local = opts.local;
    this.install = opts.install;
    this.power = opts.power;
    this.services = opts.services;
    this.store = new ConfigStore(opts.stateDir);
    this.status = new MachineStatusTracker(this.state, this.events);
    this.services?.onReadiness((reason) => this.setCondition("services", reason));
    const self = this;
    this.applier = new ConfigApplier({
      get maintenance() {
        return self.mode === "maintenance";
      },
      validationMode: opts.local ? "local" : "metal",
      activeConfig: () => this.config,
      commit: (cfg, how) => this.commit(cfg, how),
      armTryRevert: (ms) => this.armTryRevert(ms),
    });
  }

  get mode(): NodeMode {
    return this.config ? "configured" : "maintenance";
  }

  get activeConfig(): MachineConfig | undefined {
    return this.config;
  }

  /** A simulated reboot is under way: drop what a real reboot would drop, e.g. client connections. */
  onRestart(cb: () => void | Promise<void>): void {
    this.restartCbs.add(cb);
  }

  /** Boot: load the stored config (applying a staged one first) and reach the running or maintenance stage. */
  async boot(): Promise<void> {
    await this.store.init();
    this.state.apply(newResource({ namespace: RUNTIME_NS, type: VersionType.type, id: "version" }, { version: API_TAG, name: OS_NAME }), "runtime.VersionController");
    const seq = new SequenceReporter(this.events, "boot", "");
    seq.start();
    this.status.setStage("booting");
    const install = this.install;
    if (install) await seq.phase("bootloader", [["selectBootEntry", () => install.beforeBoot()]]);
    await seq.phase("config", [["loadConfig", () => this.loadStored()]]);
    if (this.config) {
      this.status.setStage("running");
      this.evaluateReadiness();
    } else {
      this.status.setStage("maintenance");
    }
    seq.stop();
  }

  private async loadStored(): Promise<void> {
    const staged = await this.store.readStaged();
    if (staged) {
      try {
        // A stored config the node cannot build its identity from would stop it listening: stay in maintenance.
        const cfg = admitted(loadConfig(staged));
        await this.store.writeActive(cfg.encode());
        this.log.info("applied the staged config at boot");
      } catch (err) {
        this.log.error({ err }, "staged config is unreadable; keeping the active one");
      }
      await this.store.clearStaged();
    }
    const active = await this.store.readActive();
    if (!active) return;
    try {
      await this.activate(admitted(loadConfig(active)));
    } catch (err) {
      // A stored config we can't read any more must not brick the node: stay in maintenance and say why.
      this.log.error({ err }, "stored config failed to load; staying in maintenance mode");
    }
  }

  private async commit(cfg: MachineConfig, how: "live" | "staged" | "try"): Promise<void> {
    if (this.mode === "maintenance" && this.install) await this.install.onFirstApply(cfg);
    if (how === "staged") {
      await this.store.writeStaged(cfg.encode());
      return;
    }
    if (how === "live") await this.store.writeActive(cfg.encode());
    else this.tryPrevious ??= this.config;
    await this.activate(cfg);
  }

  private async activate(cfg: MachineConfig | undefined): Promise<void> {
    const wasMaintenance = this.mode === "maintenance";
    this.config = cfg;
    this.publishConfigResources();
    if (cfg && wasMaintenance && this.status.current.stage === "maintenance") {
      this.status.setStage("booting");
      this.status.setStage("running");
    }
    this.evaluateReadiness();
  }

  private armTryRevert(ms: number | undefined): void {
    if (this.tryTimer) clearTimeout(this.tryTimer);
    this.tryTimer = undefined;
    if (ms === undefined) {
      this.tryPrevious = undefined;
      return;
    }
    this.tryTimer = setTimeout(() => {
      const previous = this.tryPrevious;
      this.tryPrevious = undefined;
      this.tryTimer = undefined;
      this.log.info("try-mode config timed out; reverting to the persisted config");
      void this.store.readActive().then((bytes) => this.activate(bytes ? loadConfig(bytes) : previous));
    }, ms);
    this.tryTimer.unref();
  }

  /** The MachineConfig resource carries the parsed config itself: nothing below parses the document again. */
  private publishConfigResources(): void {
    const mcPtr = machineConfigPtr;
    const mtPtr = machineTypePtr;
    if (!this.config) {
      for (const [p, owner] of [[mcPtr, CONFIG_OWNER], [mtPtr, MACHINE_TYPE_OWNER]] as const) {
        if (this.state.get(p)) this.state.destroy(p, owner);
      }
      return;
    }
    const mc = newResource(mcPtr, this.config, CONFIG_OWNER);
    mc.metadata.annotations[YAML_SPEC_ANNOTATION] = "1";
    this.state.apply(mc, CONFIG_OWNER);
    this.state.apply(newResource(mtPtr, this.config.machineType(), MACHINE_TYPE_OWNER), MACHINE_TYPE_OWNER);
  }

  /** Conditions other layers report (e.g. "apid": waiting for a certificate). */
  setCondition(name: string, reason: string | undefined): void {
    if (reason === undefined) this.extraConditions.delete(name);
    else this.extraConditions.set(name, reason);
    this.evaluateReadiness();
  }

  /** Conditions computed by the MachineStatus controller from resources (time, network, services, ...). */
  setControllerReadiness(unmet: UnmetCondition[]): void {
    this.controllerConditions = unmet;
    this.evaluateReadiness();
  }

  evaluateReadiness(): void {
    const extra = [...this.extraConditions].map(([name, reason]) => ({ name, reason }));
    const names = new Set(extra.map((c) => c.name));
    const unmet = [...this.controllerConditions.filter((c) => !names.has(c.name)), ...extra];
    this.status.setReadiness(unmet);
  }

  /** Reboot (or its simulation in local mode). Returns once the sequence has started. */
  reboot(actorId: string): void {
    this.runSequence("reboot", actorId, async (seq) => {
      this.status.setStage("rebooting", actorId);
      await seq.phase("stopEverything", [["stopAllServices", () => this.stopServices()]]);
      // A real reboot never reports the end of its sequence: the machine goes down. The pause stands in
      // for firmware and kernel time, so clients (talosctl's tracker) re-watch before connections drop.
      await new Promise((r) => setTimeout(r, SIMULATED_REBOOT_MS));
      await this.restart();
    });
  }

  shutdown(actorId: string): void {
    this.runSequence("shutdown", actorId, async (seq) => {
      this.status.setStage("shutting down", actorId);
      await seq.phase("stopEverything", [["stopAllServices", () => this.stopServices()]]);
      seq.stop();
      if (this.power) await this.power.powerOff();
      else this.log.warn("shutdown requested; in local mode the process keeps serving");
    });
  }

  /** Public for src/lifecycle/install (upgrade, reset): same one-at-a-time guard and reporting as reboot. */
  runSequence(name: string, actorId: string, body: (seq: SequenceReporter) => Promise<void>): void {
    if (this.busySequence) throw failedPrecondition(`sequence "${this.busySequence}" is already running`);
    this.busySequence = name;
    const seq = new SequenceReporter(this.events, name, actorId);
    seq.start();
    // Run after the reply is sent, like upstream's goroutine.
    setTimeout(() => {
      body(seq)
        .catch((err) => {
          this.log.error({ err }, `${name} sequence failed`);
          seq.stop((err as Error).message);
        })
        .finally(() => {
          this.busySequence = undefined;
        });
    }, 200);
  }

  /** Stop every service (before reboot, shutdown, reset). */
  async stopServices(): Promise<void> {
    await this.services?.stopAll();
  }

  /**
   * The machine goes down and comes back: reboot(2) on a real machine; in local mode a simulated reboot — new boot
   * id, fresh event log, the config resources gone and published again, so everything derived from them is
   * built anew as after a real boot.
   */
  async restart(): Promise<void> {
    if (this.power) {
      await this.power.reboot();
      return;
    }
    this.armTryRevert(undefined);
    this.bootId = randomUUID();
    this.events.reset();
    this.status.resetReadiness();
    // Like a real reboot, connections drop; talosctl then reconnects and replays the new boot's events.
    for (const cb of this.restartCbs) await cb();
    this.config = undefined;
    this.publishConfigResources();
    await this.boot();
  }
}
