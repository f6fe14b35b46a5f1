/**
 * How lifecycle work is reported: named phases of named tasks (TaskEvents on the event bus, like Talos's
 * sequencer) plus free-text progress lines (LifecycleService streams them as `message`).
 */
import { SIMULATED_REBOOT_MS, type Node } from "../node.js";
import type { SequenceReporter } from "../sequence.js";

export type Task = [name: string, fn: () => Promise<void> | void];

export interface Reporter {
  phase(name: string, tasks: Task[]): Promise<void>;
  say(message: string): void;
}

/** Tasks reported as events of `seq`; progress lines go to `say` (and the log). */
export function reporter(seq: SequenceReporter | undefined, say: (m: string) => void): Reporter {
  return {
    phase: async (name, tasks) => {
      if (seq) return seq.phase(name, tasks);
      for (const [, fn] of tasks) await fn();
    },
    say,
  };
}

export const quiet: Reporter = reporter(undefined, () => {});

/**
 * How a sequence that reboots ends (as Node.reboot does): no STOP event, since a real machine just goes down; a
 * pause standing in for firmware time, so talosctl's tracker re-watches before connections drop; then the
 * (simulated, in local mode) reboot.
 */
export async function rebootNow(node: Node): Promise<void> {
  await new Promise((r) => setTimeout(r, SIMULATED_REBOOT_MS));
  await node.restart();
}
