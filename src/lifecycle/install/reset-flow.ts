/**
 * MachineService/Reset: validation (upstream's checks and texts), then the reset sequence:
 *   leave (graceful control plane: leave etcd) → stopEverything/stopAllServices (what `talosctl reset` waits for)
 *   → unmountSystem → reset (whole system disk) | resetSpec (listed labels) → resetUserDisks → reboot | shutdown.
 * A failing phase ends the sequence with upstream's fatal NOOP event and a reboot (back to running).
 * Wiping the system disk or STATE forgets the machine config, so the node comes back in maintenance mode. Local
 * mode cannot power off; "shutdown" there also comes back up (in maintenance), so the flow stays testable.
 */
import { ResetRequest_WipeMode as WipeMode } from "../../machinery/api/gen/machine/machine_pb.js";
import type { DiskInfo } from "../../host/disks.js";
import { ApiError, Code } from "../../machinery/errors.js";
import type { Node } from "../node.js";
import type { SequenceReporter } from "../sequence.js";
import { EPHEMERAL_FILES, STATE_FILES, checkLabels, emptyDir, removeStateFiles, wipeDisk, wipePartition, type WipeableLabel } from "./reset.js";
import type { SystemDisk } from "./system-disk.js";
import { rebootNow } from "./tasks.js";

export interface ResetRequestLike {
  graceful: boolean;
  reboot: boolean;
  systemPartitionsToWipe: { label: string; wipe: boolean }[];
  userDisksToWipe: string[];
  mode: WipeMode;
}

export interface ResetPlan {
  graceful: boolean;
  reboot: boolean;
  systemDisk: boolean;
  labels: WipeableLabel[];
  userDisks: string[];
}

const unknown = (msg: string) => new ApiError(Code.Unknown, msg);

export function validateReset(req: ResetRequestLike, disks: { disk: DiskInfo; system: boolean }[]): ResetPlan {
  if (req.userDisksToWipe.length > 0) {
    if (req.mode === WipeMode.SYSTEM_DISK) throw unknown("reset failed: invalid input, wipe mode SYSTEM_DISK doesn't support UserDisksToWipe parameter");
    for (const dev of req.userDisksToWipe) {
      const hit = disks.find((d) => d.disk.devPath === dev);
      if (!hit) throw unknown(`reset user disk failed: device ${dev} wasn't found`);
      if (hit.disk.readonly) throw unknown(`reset user disk failed: device ${dev} is readonly`);
      if (hit.system) throw unknown(`reset user disk failed: device ${dev} is the system disk`);
    }
  }
  const labels = req.systemPartitionsToWipe.filter((p) => p.wipe).map((p) => p.label);
  if (req.systemPartitionsToWipe.length > 0 && req.mode === WipeMode.USER_DISKS) {
    throw unknown("reset failed: invalid input, wipe mode USER_DISKS doesn't support SystemPartitionsToWipe parameter");
  }
  return {
    graceful: req.graceful,
    reboot: req.reboot,
    systemDisk: req.mode === WipeMode.ALL || req.mode === WipeMode.SYSTEM_DISK,
    labels: checkLabels(labels),
    userDisks: req.mode === WipeMode.SYSTEM_DISK ? [] : req.userDisksToWipe,
  };
}

export interface ResetEnv {
  node: Node;
  stateDir: string;
  /** Folders outside stateDir that EPHEMERAL holds here (emptied with it). */
  ephemeralDirs: string[];
  disk: SystemDisk | undefined;
  leaveEtcd?: () => Promise<void>;
  forgetSystemDisk: () => Promise<void>;
  release: () => void;
}

export async function runReset(seq: SequenceReporter, plan: ResetPlan, env: ResetEnv): Promise<void> {
  const { node } = env;
  const actor = seq.actorId;
  node.status.setStage("resetting", actor);
  try {
    const type = node.activeConfig?.machineType();
    if (plan.graceful && env.leaveEtcd && (type === "controlplane" || type === "init")) {
      await seq.phase("leave", [["leaveEtcd", env.leaveEtcd]]);
    }
    await seq.phase("stopEverything", [["stopAllServices", () => node.stopServices()]]);
    // Upstream's phase before the wipe, which its reset test waits for. With every service stopped nothing uses
    // EPHEMERAL any more; in local mode it is a folder (nothing mounted), and PID 1 releases the system disk's
    // mounts before the reboot that follows (pid1/state-mounts.ts).
    await seq.phase("unmountSystem", [["unmountEphemeralPartition", () => {}]]);
    if (plan.systemDisk && plan.labels.length === 0) {
      await seq.phase("reset", [
        [
          "resetSystemDisk",
          async () => {
            if (env.disk) await wipeDisk(env.disk.path);
            await env.forgetSystemDisk();
            await removeStateFiles(env.stateDir, [...STATE_FILES, ...EPHEMERAL_FILES]);
            for (const dir of env.ephemeralDirs) await emptyDir(dir);
          },
        ],
      ]);
    } else if (plan.systemDisk) {
      await seq.phase("resetSpec", [
        [
          "resetSystemDiskSpec",
          async () => {
            for (const label of plan.labels) {
              if (env.disk) await wipePartition(env.disk, label);
              if (label === "STATE") await removeStateFiles(env.stateDir, STATE_FILES);
              if (label === "EPHEMERAL") {
                await removeStateFiles(env.stateDir, EPHEMERAL_FILES);
                for (const dir of env.ephemeralDirs) await emptyDir(dir);
              }
            }
          },
        ],
      ]);
    }
    if (plan.userDisks.length > 0) {
      await seq.phase("resetUserDisks", [
        [
          "resetUserDisks",
          async () => {
            for (const dev of plan.userDisks) await wipeDisk(dev);
          },
        ],
      ]);
    }
  } catch (err) {
    // As upstream: a failed reset sequence is fatal and the machine reboots — nothing was wiped yet when a graceful
    // step fails, so it comes back running its config — with the failure on the event stream for the caller.
    const message = seq.fail(err);
    node.log.error({ err }, message);
    node.status.setStage("rebooting", actor);
    env.release();
    await rebootNow(node);
    return;
  }
  env.release();
  if (!plan.reboot) node.log.warn("reset asked for a power-off; in local mode the node comes back up instead");
  await rebootNow(node);
}
