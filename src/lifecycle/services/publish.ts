/**
 * What the rest of the node sees of the supervisor: Service resources (like upstream's
 * v1alpha1.ServiceController: present only while the service is Running) and the readiness reason.
 */
import { newResource } from "../../machinery/resources/resource.js";
import { RUNTIME_NS, ServiceType, type ServiceSpec } from "../../machinery/resources/types/runtime.js";
import type { State } from "../../state/types.js";
import type { ServiceInfoData, Supervisor } from "../../supervisor/index.js";

export const SERVICE_OWNER = "v1alpha1.ServiceController";

export function publishService(state: State, info: ServiceInfoData): void {
  const ptr = { namespace: RUNTIME_NS, type: ServiceType.type, id: info.id };
  if (info.state === "Running") {
    const spec: ServiceSpec = { running: true, healthy: info.health.healthy, unknown: info.health.unknown };
    state.apply(newResource(ptr, spec, SERVICE_OWNER), SERVICE_OWNER);
  } else if (state.get(ptr)) {
    state.destroy(ptr, SERVICE_OWNER);
  }
}

/** "<id> not running" / "<id> not healthy" for each required service that is not up; undefined when all are. */
export function unmetServices(sup: Supervisor, required: string[]): string | undefined {
  const problems: string[] = [];
  for (const id of required) {
    const info = sup.info(id);
    if (!info || info.state !== "Running") problems.push(`${id} not running`);
    else if (!info.health.unknown && !info.health.healthy) problems.push(`${id} not healthy`);
  }
  return problems.length === 0 ? undefined : problems.join(", ");
}
