/** network.TimeServerSpecController: TimeServerStatus `timeservers` from `machine.time.servers`, else upstream's default. */
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import type { Controller } from "../../state/runtime/index.js";
import { TimeServerStatusType, type TimeServerStatusSpec } from "../../machinery/resources/types/network.js";
import { NETWORK_NS } from "./shared.js";

export const TIMESERVER_ID = "timeservers";
export const DEFAULT_NTP_SERVER = "time.cloudflare.com";

export function timeServerSpecController(): Controller {
  return {
    name: "network.TimeServerSpecController",
    inputs: [machineConfigInput],
    outputs: [{ type: TimeServerStatusType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const servers = machineConfig(ctx)?.machine?.time?.servers ?? [];
      const spec: TimeServerStatusSpec = { timeServers: servers.length ? [...servers] : [DEFAULT_NTP_SERVER], useNTS: false };
      ctx.apply({ namespace: NETWORK_NS, type: TimeServerStatusType.type, id: TIMESERVER_ID, spec });
    },
  };
}
