/**
 * time.SyncController: TimeStatus (`runtime`/`node`). In local mode the agent uses the host clock,
 * which the host keeps in sync — like Talos in container mode, time sync is reported disabled and the
 * clock synced. With an NTP client (`synced` injected) the status follows it unless machine.time
 * disables sync. The epoch increments whenever the wall clock jumps by more than 15 minutes relative
 * to the monotonic clock, so certificate controllers can react.
 */
import { TimeStatusType } from "../../machinery/resources/types/time.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import type { Controller } from "../../state/runtime/index.js";
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";

export const EPOCH_LIMIT_MS = 15 * 60_000;

export interface TimeSyncOptions {
  /** NTP sync state; absent means the host clock is authoritative (local mode). */
  synced?: () => boolean;
  wallNow?: () => number;
  monoNow?: () => number;
  /** How often the clocks are compared (and `synced` re-read). Default 10 s. */
  checkIntervalMs?: number;
}

export function timeSyncController(opts: TimeSyncOptions = {}): Controller {
  const wallNow = opts.wallNow ?? Date.now;
  const monoNow = opts.monoNow ?? (() => performance.now());
  let epoch = 0;
  let last: { wall: number; mono: number } | undefined;
  return {
    name: "time.SyncController",
    inputs: [machineConfigInput],
    outputs: [{ type: TimeStatusType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const now = { wall: wallNow(), mono: monoNow() };
      if (last && Math.abs(now.wall - last.wall - (now.mono - last.mono)) > EPOCH_LIMIT_MS) epoch++;
      last = now;
      const syncDisabled = !opts.synced || machineConfig(ctx)?.machine?.time?.disabled === true;
      const synced = syncDisabled || opts.synced!();
      ctx.apply({ namespace: RUNTIME_NS, type: TimeStatusType.type, id: "node", spec: { synced, epoch, syncDisabled } });
      return { requeueAfterMs: opts.checkIntervalMs ?? 10_000 };
    },
  };
}
