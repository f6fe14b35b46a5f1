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
import { healthHandlers, type HealthOptions } from "./handlers/health.js";
import { inspectHandlers } from "./handlers/inspect.js";
// install/upgrade/reset (src/lifecycle/install)
import { ImageService } from "../machinery/api/gen/machine/image_pb.js";
import { LifecycleService } from "../machinery/api/gen/machine/lifecycle_pb.js";
import { StorageService } from "../machinery/api/gen/storage/storage_pb.js";
import { imageHandlers, legacyImageHandlers } from "./handlers/images.js";
import { lifecycleHandlers } from "./handlers/lifecycle.js";
import { storageHandlers } from "./handlers/storage.js";
import { upgradeHandlers } from "./handlers/upgrade.js";
import { resetHandlers } from "./handlers/reset.js";
import { metaHandlers } from "./handlers/meta.js";
import { netstatHandlers } from "./handlers/netstat.js";
import { imageImportHandlers } from "./handlers/image-import.js";
import { pcapHandlers } from "./handlers/pcap.js";
import { timeHandlers } from "./handlers/time.js";
import { TimeService } from "../machinery/api/gen/time/time_pb.js";
import { formatRequest, logRequests, type RequestRecord } from "./request-log.js";
import { goLogTime } from "../supervisor/services/apid.js";
import { formatMemberId } from "../supervisor/etcd/ops.js";

/**
 * Every call goes to the machined log (written directly, like the supervisor's transition lines, so it does not
 * depend on the console log level) and, while the apid service runs (configured node), to the apid log.
 */
function requestSink(deps: ApiDeps): (r: RequestRecord) => void {
  return (r) => {
    const services = deps.services;
    if (!services) return;
    const line = `${goLogTime()} ${formatRequest(r)}\n`;
    services.logs.get("machined").write(line);
    if (services.supervisor.has("apid")) services.logs.get("apid").write(line);
  };
}

/** `forwarder`: how handlers that read other nodes (the cluster health check) ask them (the server's Forwarder). */
export function buildServices(deps: ApiDeps, forwarder?: HealthOptions["forwarder"]): ServiceHandlers {
  return logRequests(buildHandlers(deps, forwarder), requestSink(deps));
}

function buildHandlers(deps: ApiDeps, forwarder: HealthOptions["forwarder"]): ServiceHandlers {
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
    ...upgradeHandlers(deps),
    ...resetHandlers(deps),
    ...metaHandlers(deps),
    ...netstatHandlers(deps),
    ...pcapHandlers(deps),
    ...legacyImageHandlers(deps),
  };
  return new Map<DescService, Handlers>([
    [MachineService, machine],
    [CosiState, cosiHandlers(deps)],
    [
      ClusterService,
      healthHandlers(deps, {
        forwarder,
        etcdRuns: () => deps.services?.etcd !== undefined,
        etcdMembers: async () => {
          const etcd = deps.services?.etcd;
          if (!etcd) return [];
          return (await etcd.memberList()).map((m) => ({ id: formatMemberId(m.id), hostname: m.hostname, peerUrls: m.peerUrls, isLearner: m.isLearner }));
        },
      }),
    ],
    [InspectService, inspectHandlers(deps)],
    [ImageService, { ...imageHandlers(deps), ...imageImportHandlers(deps) }],
    [LifecycleService, lifecycleHandlers(deps)],
    [StorageService, storageHandlers(deps)],
    [TimeService, timeHandlers(deps)],
  ]);
}
