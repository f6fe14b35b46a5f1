/**
 * Waits for the booted system to be healthy (MachineStatus stage running and ready — the same condition
 * Talos's DropUpgradeFallbackController uses) and then calls `onReady` once. For a trial boot it also arms a
 * deadline: a new version that never becomes ready reboots, which spends one of its boot tries.
 */
import { MachineStatusType } from "../../machinery/resources/types/runtime.js";
import { watch } from "../../machinery/resources/read.js";
import type { State } from "../../state/types.js";

export interface ReadyWatchOptions {
  onReady: () => Promise<void>;
  /** Only for trial boots: called when not ready within `timeoutMs`. */
  onTimeout?: () => void;
  timeoutMs?: number;
}

export class ReadyWatch {
  private unsubscribe: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly state: State) {}

  arm(o: ReadyWatchOptions): void {
    this.disarm();
    let fired = false;
    if (o.onTimeout && o.timeoutMs) {
      const onTimeout = o.onTimeout;
      this.timer = setTimeout(() => {
        this.disarm();
        onTimeout();
      }, o.timeoutMs);
      this.timer.unref();
    }
    const unsubscribe = watch(this.state, MachineStatusType, "machine", (e) => {
      if (fired || e.type === "destroyed") return;
      const spec = e.resource.spec;
      if (spec.stage !== "running" || !spec.status.ready) return;
      fired = true;
      this.disarm();
      void o.onReady();
    });
    // the first event may arrive synchronously and disarm before we stored the handle
    if (fired) unsubscribe();
    else this.unsubscribe = unsubscribe;
  }

  disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }
}
