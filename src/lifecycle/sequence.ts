/**
 * Sequence/phase/task progress as Talos reports it on the event bus. talosctl's action trackers print
 * these, and `talosctl shutdown/reset` wait for the task "stopAllServices".
 */
import { create } from "@bufbuild/protobuf";
import {
  PhaseEventSchema,
  PhaseEvent_Action,
  SequenceEventSchema,
  SequenceEvent_Action,
  TaskEventSchema,
  TaskEvent_Action,
} from "../machinery/api/gen/machine/machine_pb.js";
import type { EventBus } from "../state/events.js";
import { Code } from "../machinery/api/gen/common/common_pb.js";

export class SequenceReporter {
  constructor(
    private readonly events: EventBus,
    readonly sequence: string,
    readonly actorId: string,
  ) {}

  start(): void {
    this.events.publish(SequenceEventSchema, create(SequenceEventSchema, { sequence: this.sequence, action: SequenceEvent_Action.START }), this.actorId);
  }

  stop(error?: string): void {
    this.events.publish(
      SequenceEventSchema,
      create(SequenceEventSchema, {
        sequence: this.sequence,
        action: SequenceEvent_Action.STOP,
        error: error ? { message: error } : undefined,
      }),
      this.actorId,
    );
  }

  /** Phases started so far (1-based number of the current one), for upstream's failure text. */
  phases = 0;
  /** Where the last failing task was: phase number, task number and count (upstream's `phase N`, `task i/k`). */
  failedAt: { phase: number; task: number; tasks: number } | undefined;

  /** Run one named phase made of named tasks, reporting each start and stop. */
  async phase(name: string, tasks: [string, () => Promise<void> | void][]): Promise<void> {
    const number = ++this.phases;
    this.events.publish(PhaseEventSchema, create(PhaseEventSchema, { phase: name, action: PhaseEvent_Action.START }), this.actorId);
    for (const [i, [task, fn]] of tasks.entries()) {
      this.events.publish(TaskEventSchema, create(TaskEventSchema, { task, action: TaskEvent_Action.START }), this.actorId);
      try {
        await fn();
      } catch (err) {
        this.failedAt = { phase: number, task: i + 1, tasks: tasks.length };
        throw err;
      }
      this.events.publish(TaskEventSchema, create(TaskEventSchema, { task, action: TaskEvent_Action.STOP }), this.actorId);
    }
    this.events.publish(PhaseEventSchema, create(PhaseEventSchema, { phase: name, action: PhaseEvent_Action.STOP }), this.actorId);
  }

  /**
   * A sequence that failed, reported as upstream's controller does: the sequence stops, then a NOOP event carries
   * the fatal error `sequence failed: error running phase N in <name> sequence: task i/k: failed, <reason>`
   * (talosctl's trackers print it and give up). Returns that message.
   */
  fail(err: unknown): string {
    const reason = err instanceof Error ? err.message : String(err);
    const at = this.failedAt;
    const where = at ? `error running phase ${at.phase} in ${this.sequence} sequence: task ${at.task}/${at.tasks}: failed, ` : "";
    const message = `sequence failed: ${where}${reason}`;
    this.stop();
    this.events.publish(
      SequenceEventSchema,
      create(SequenceEventSchema, { sequence: this.sequence, action: SequenceEvent_Action.NOOP, error: { code: Code.FATAL, message } }),
      this.actorId,
    );
    return message;
  }
}
