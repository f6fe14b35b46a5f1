/** TimeStatuses.v1alpha1.talos.dev (ns `runtime`, id `node`): whether the clock can be trusted (§3.1 row 28). */
import { StatusSpecSchema } from "../../api/gen/resource/definitions/time/time_pb.js";
import { specToProto } from "../protoenc.js";
import type { ResourceType } from "../resource.js";

export interface TimeStatusSpec {
  synced: boolean;
  /** Incremented whenever the wall clock jumps by more than the epoch limit (15 min). */
  epoch: number;
  syncDisabled: boolean;
}

export const TimeStatusType: ResourceType<TimeStatusSpec> = {
  type: "TimeStatuses.v1alpha1.talos.dev",
  defaultNamespace: "runtime",
  printColumns: [{ name: "Synced", jsonPath: "{.synced}" }],
  toProto: (s) => specToProto(StatusSpecSchema, s),
};

export const TIME_TYPES: ResourceType[] = [TimeStatusType] as ResourceType[];
