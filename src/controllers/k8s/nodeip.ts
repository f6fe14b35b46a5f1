/**
 * k8s.NodeIPController: NodeIPs `k8s`/`kubelet`, the kubelet's `--node-ip`: the node's routed addresses outside
 * the Kubernetes networks (NodeAddress `routed-no-k8s`) filtered by NodeIPConfig, at most one per family. With no
 * suitable address the last result stays, as upstream (which only warns).
 */
import { pointer, readSpec } from "../../machinery/resources/read.js";
import { NODE_IP_ID, NodeIPConfigType, NodeIPType } from "../../machinery/resources/types/k8s-status.js";
import { NODE_ADDRESS, NodeAddressType, nodeAddressIPs } from "../../machinery/resources/types/network.js";
import { pickNodeIPs } from "../../machinery/kubernetes/node-ip.js";
import type { Controller } from "../../state/runtime/index.js";

export function nodeIPController(): Controller {
  return {
    name: "k8s.NodeIPController",
    inputs: [
      { ...pointer(NodeIPConfigType, NODE_IP_ID), kind: "weak" },
      { ...pointer(NodeAddressType, NODE_ADDRESS.routedNoK8s), kind: "weak" },
    ],
    outputs: [{ type: NodeIPType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = readSpec(ctx, NodeIPConfigType, NODE_IP_ID);
      const addrs = readSpec(ctx, NodeAddressType, NODE_ADDRESS.routedNoK8s);
      if (!cfg || !addrs) return;
      const { ips, skipped } = pickNodeIPs(nodeAddressIPs(addrs), cfg);
      if (ips.length === 0) {
        ctx.log("no suitable node IP found, please make sure .machine.kubelet.nodeIP filters and pod/service subnets are set up correctly");
        return;
      }
      for (const a of skipped) ctx.log("node IP skipped, please use .machine.kubelet.nodeIP to provide explicit subnet for the node IP", { address: a });
      ctx.apply({ ...pointer(NodeIPType, NODE_IP_ID), spec: { addresses: ips } });
    },
  };
}
