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

  /** Run one named phase made of named tasks, reporting each start and stop. */
  async phase(name: string, tasks: [string, () => Promise<void> | void][]): Promise<void> {
    this.events.publish(PhaseEventSchema, create(PhaseEventSchema, { phase: name, action: PhaseEvent_Action.START }), this.actorId);
    for (const [task, fn] of tasks) {
      this.events.publish(TaskEventSchema, create(TaskEventSchema, { task, action: TaskEvent_Action.START }), this.actorId);
      await fn();
      this.events.publish(TaskEventSchema, create(TaskEventSchema, { task, action: TaskEvent_Action.STOP }), this.actorId);
    }
    this.events.publish(PhaseEventSchema, create(PhaseEventSchema, { phase: name, action: PhaseEvent_Action.STOP }), this.actorId);
  }
}
