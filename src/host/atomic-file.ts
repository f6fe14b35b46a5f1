/**
 * The atomic-write helper (files/atomic.ts) bound to the machine's own filesystem, for callers that have no
 * Files of their own to pass.
 */
import { hostFiles } from "./files/real.js";
import { cleanupTemporaries as cleanup, writeFileAtomic as write, type AtomicData } from "./files/atomic.js";

export function writeFileAtomic(target: string, data: AtomicData, mode = 0o600): Promise<void> {
  return write(hostFiles, target, data, mode);
}

export function cleanupTemporaries(target: string): Promise<void> {
  return cleanup(hostFiles, target);
}
