/**
 * cluster.EndpointController: Endpoints `controlplane`/`discovery`, the addresses of the Members that are control
 * planes (`controlplane` or `init`), sorted, as upstream. The consumers (the worker's trustd client, etcd join,
 * the API certificate SANs) merge it with the cluster endpoint's and the API server's addresses, so a control plane
 * found through discovery is reachable even when the cluster endpoint is not.
 */
import { compareAddr, formatAddr, parseAddr } from "../../machinery/net/addr.js";
import { readAll } from "../../machinery/resources/read.js";
import { CLUSTER_NS, MemberType } from "../../machinery/resources/types/cluster.js";
import { CONTROLPLANE_NS, ENDPOINT_IDS, EndpointType } from "../../machinery/resources/types/k8s-status.js";
import type { Controller } from "../../state/runtime/index.js";

export function discoveryEndpointController(): Controller {
  return {
    name: "cluster.EndpointController",
    inputs: [{ namespace: CLUSTER_NS, type: MemberType.type, kind: "weak" }],
    outputs: [{ type: EndpointType.type, kind: "shared" }],
    reconcile(ctx) {
      const ips: Uint8Array[] = [];
      for (const { spec } of readAll(ctx, MemberType, CLUSTER_NS)) {
        if (spec.machineType !== "controlplane" && spec.machineType !== "init") continue;
        for (const a of spec.addresses) {
          const ip = parseAddr(a);
          if (ip) ips.push(ip);
        }
      }
      ips.sort(compareAddr);
      ctx.apply({ namespace: CONTROLPLANE_NS, type: EndpointType.type, id: ENDPOINT_IDS.discovery, spec: { addresses: ips.map(formatAddr), hosts: [] } });
    },
  };
}
