/**
 * network.StatusController: NetworkStatus `status`, the "network" condition of MachineStatus:
 * addressReady = NodeAddress `current` is not empty; connectivityReady = a default route exists (we run
 * no probes); hostnameReady = HostnameStatus exists; etcFilesReady = `hosts` and `resolv.conf` exist in
 * the etc folder (the one we write when managing the network, else the host's). Files are not resources
 * here, so the controller watches the folder for them (inotify) instead of looking again periodically.
 */
import path from "node:path";
import { hostFiles, type Files } from "../../host/files/index.js";
import type { Controller } from "../../state/runtime/index.js";
import { HostnameStatusType, NetworkStatusType, NodeAddressType, RouteStatusType, type NetworkStatusSpec } from "../../machinery/resources/types/network.js";
import { readAll, readSpec } from "../../machinery/resources/read.js";
import { HOSTNAME_ID } from "./hostname-merge.js";
import { NETWORK_NS, type NetworkEnv } from "./shared.js";

export const STATUS_ID = "status";
const ETC_FILES = ["hosts", "resolv.conf"];

export function statusController(env: NetworkEnv, files: Files = hostFiles): Controller {
  return {
    name: "network.StatusController",
    inputs: [
      { namespace: NETWORK_NS, type: NodeAddressType.type, id: "current", kind: "weak" },
      { namespace: NETWORK_NS, type: RouteStatusType.type, kind: "weak" },
      { namespace: NETWORK_NS, type: HostnameStatusType.type, id: HOSTNAME_ID, kind: "weak" },
    ],
    outputs: [{ type: NetworkStatusType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const current = readSpec(ctx, NodeAddressType, "current");
      const routes = readAll(ctx, RouteStatusType).map((r) => r.spec);
      const present = await Promise.all(ETC_FILES.map((f) => files.exists(path.join(env.etcRoot, f))));
      const spec: NetworkStatusSpec = {
        addressReady: (current?.addresses.length ?? 0) > 0,
        // Upstream tests for a zero destination in any table; the local table has none.
        connectivityReady: routes.some((r) => r.dst === ""),
        hostnameReady: ctx.get({ namespace: NETWORK_NS, type: HostnameStatusType.type, id: HOSTNAME_ID }) !== undefined,
        etcFilesReady: present.every(Boolean),
      };
      ctx.apply({ namespace: NETWORK_NS, type: NetworkStatusType.type, id: STATUS_ID, spec });
    },
    wakeups: (wake) => env.watchFiles(ETC_FILES.map((f) => path.join(env.etcRoot, f)), wake),
  };
}
