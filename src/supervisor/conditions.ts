/**
 * Conditions a service waits for while in Waiting. Descriptions follow upstream wording so that
 * `talosctl service` reads the same: `Waiting for file "/x" to exist, network, time sync`.
 */
import { hostFiles, type Files } from "../host/files/index.js";
import { sleep } from "./health.js";
import type { Condition } from "./types.js";

/** A condition from an async wait function, e.g. condition("network", (s) => net.ready(s)). */
export function condition(description: string, wait: (signal: AbortSignal) => Promise<void>): Condition {
  return { describe: () => description, wait };
}

/** Polls a predicate until it holds. */
export function pollCondition(
  description: string,
  predicate: () => boolean | Promise<boolean>,
  intervalMs = 250,
): Condition {
  return {
    describe: () => description,
    async wait(signal) {
      for (;;) {
        if (await predicate()) return;
        if (!(await sleep(intervalMs, signal))) throw abortReason(signal);
      }
    },
  };
}

export function fileExists(path: string, intervalMs = 250, files: Files = hostFiles): Condition {
  return pollCondition(`file ${JSON.stringify(path)} to exist`, () => files.exists(path), intervalMs);
}

/** All conditions at once; the description lists only those not yet satisfied. */
export function allOf(conds: Condition[]): Condition {
  const pending = new Set(conds);
  return {
    describe: () => [...pending].map((c) => c.describe()).join(", "),
    async wait(signal) {
      await Promise.all(
        conds.map(async (c) => {
          await c.wait(signal);
          pending.delete(c);
        }),
      );
    },
  };
}

export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error("aborted");
}
