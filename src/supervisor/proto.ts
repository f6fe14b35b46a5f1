/** Conversions from supervisor data to the machine API messages (ServiceInfo, ServiceStateEvent). */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  ServiceEventSchema,
  ServiceEventsSchema,
  ServiceHealthSchema,
  ServiceInfoSchema,
  ServiceStateEventSchema,
  type ServiceHealth,
  type ServiceInfo,
  type ServiceStateEvent,
} from "../machinery/api/gen/machine/machine_pb.js";
import type { HealthStatus, ServiceInfoData, ServiceState } from "./types.js";

export function toServiceHealth(h: HealthStatus): ServiceHealth {
  return create(ServiceHealthSchema, {
    unknown: h.unknown,
    healthy: h.healthy,
    lastMessage: h.lastMessage,
    lastChange: timestampFromDate(h.lastChange),
  });
}

/** machine.ServiceInfo with events and health always set (talosctl dereferences both). */
export function toServiceInfo(d: ServiceInfoData): ServiceInfo {
  return create(ServiceInfoSchema, {
    id: d.id,
    state: d.state,
    events: create(ServiceEventsSchema, {
      events: d.events.map((e) => create(ServiceEventSchema, { msg: e.msg, state: e.state, ts: timestampFromDate(e.ts) })),
    }),
    health: toServiceHealth(d.health),
  });
}

export function toServiceStateEvent(service: string, state: ServiceState, message: string, health: HealthStatus): ServiceStateEvent {
  return create(ServiceStateEventSchema, { service, action: state as number, message, health: toServiceHealth(health) });
}
