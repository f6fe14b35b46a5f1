/**
 * The machine's stage and readiness: kept as the MachineStatus resource and republished on the event
 * bus as MachineStatusEvent, which is what `talosctl reboot/upgrade` trackers wait for.
 */
import { create } from "@bufbuild/protobuf";
import {
  MachineStatusEventSchema,
  MachineStatusEvent_MachineStage as Stage,
} from "../machinery/api/gen/machine/machine_pb.js";
import { newResource } from "../machinery/resources/resource.js";
import {
  MachineStatusType,
  RUNTIME_NS,
  STAGES,
  type MachineStatusSpec,
  type StageName,
  type UnmetCondition,
} from "../machinery/resources/types/runtime.js";
import type { EventBus } from "../state/events.js";
import type { State } from "../state/types.js";

export const MACHINE_STATUS_OWNER = "runtime.MachineStatusController";
const ptr = { namespace: RUNTIME_NS, type: MachineStatusType.type, id: "machine" };

export class MachineStatusTracker {
  private spec: MachineStatusSpec = { stage: "booting", status: { ready: false, unmetConditions: [] } };
  /** Readiness as last evaluated; shown whenever the stage is booting or running. */
  private readiness: MachineStatusSpec["status"] = { ready: false, unmetConditions: [] };

  constructor(
    private readonly state: State,
    private readonly events: EventBus,
  ) {}

  get current(): MachineStatusSpec {
    return structuredClone(this.spec);
  }

  setStage(stage: StageName, actorId = ""): void {
    // Readiness is only evaluated while booting/running; other stages report ready with no conditions.
    const status = stage === "booting" || stage === "running" ? this.readiness : { ready: true, unmetConditions: [] };
    this.spec = { stage, status: structuredClone(status) };
    this.publish(actorId);
  }

  setReadiness(unmet: UnmetCondition[], actorId = ""): void {
    const next = { ready: unmet.length === 0, unmetConditions: unmet };
    this.readiness = next;
    if (this.spec.stage !== "booting" && this.spec.stage !== "running") return;
    if (JSON.stringify(next) === JSON.stringify(this.spec.status)) return;
    this.spec = { ...this.spec, status: next };
    this.publish(actorId);
  }

  /** A new boot starts not ready until the conditions are evaluated again. */
  resetReadiness(): void {
    this.readiness = { ready: false, unmetConditions: [] };
  }

  /** Re-send the current status (after the event log was reset by a simulated reboot). */
  republish(): void {
    this.publish("");
  }

  private publish(actorId: string): void {
    this.state.apply(newResource(ptr, this.current), MACHINE_STATUS_OWNER);
    this.events.publish(
      MachineStatusEventSchema,
      create(MachineStatusEventSchema, {
        stage: STAGES.indexOf(this.spec.stage) as Stage,
        status: { ready: this.spec.status.ready, unmetConditions: this.spec.status.unmetConditions },
      }),
      actorId,
    );
  }
}
