/** Assembles every handler group into the per-service handler map the server registers. */
import type { DescService } from "@bufbuild/protobuf";
import type { Handlers } from "./transport/service.js";
import { MachineService } from "../machinery/api/gen/machine/machine_pb.js";
import type { ApiDeps } from "./deps.js";
import type { ServiceHandlers } from "./server.js";
import { versionHandlers } from "./handlers/version.js";
import { applyHandlers } from "./handlers/apply.js";
import { eventsHandlers } from "./handlers/events.js";
import { powerHandlers } from "./handlers/power.js";
import { fileHandlers } from "./handlers/files.js";
import { systemHandlers } from "./handlers/system.js";
import { accessHandlers } from "./handlers/access.js";
import { cosiHandlers } from "./handlers/cosi.js";
import { serviceHandlers } from "./handlers/services.js";
import { logHandlers } from "./handlers/logs.js";
import { containerHandlers } from "./handlers/containers.js";
import { etcdHandlers } from "./handlers/etcd.js";
import { State as CosiState } from "../machinery/api/gen/cosi/state_pb.js";
import { ClusterService } from "../machinery/api/gen/cluster/cluster_pb.js";
import { InspectService } from "../machinery/api/gen/inspect/inspect_pb.js";
import { healthHandlers } from "./handlers/health.js";
import { inspectHandlers } from "./handlers/inspect.js";

export function buildServices(deps: ApiDeps): ServiceHandlers {
  const machine = {
    ...versionHandlers(deps),
    ...applyHandlers(deps),
    ...eventsHandlers(deps),
    ...powerHandlers(deps),
    ...fileHandlers(deps),
    ...systemHandlers(deps),
    ...accessHandlers(deps),
    ...serviceHandlers(deps),
    ...logHandlers(deps),
    ...containerHandlers(deps),
    ...etcdHandlers(deps),
  };
  return new Map<DescService, Handlers>([
    [MachineService, machine],
    [CosiState, cosiHandlers(deps)],
    [ClusterService, healthHandlers(deps)],
    [InspectService, inspectHandlers(deps)],
  ]);
}
