/**
 * secrets.APICertSANsController: the names the Talos API server certificate must carry (CertSANs `api`) — the
 * configured machine.certSANs, every address the node has had (accumulative, without Kubernetes ones), 127.0.0.1,
 * and the short hostname and FQDN from HostnameStatus — deduplicated and sorted as upstream does.
 */
import { readSpec, pointer } from "../../machinery/resources/read.js";
import {
  fqdn,
  HOSTNAME_ID,
  HostnameStatusType,
  NETWORK_NS,
  NODE_ADDRESS,
  NodeAddressType,
  nodeAddressIPs,
} from "../../machinery/resources/types/network.js";
import { CertSANType, OSRootType, SECRET_IDS, type CertSANSpec } from "../../machinery/resources/types/secrets.js";
import type { Controller } from "../../state/runtime/index.js";
import { certSANs } from "../../machinery/pki/cert-sans.js";

export function apiCertSANsController(): Controller {
  const ptr = pointer(CertSANType, SECRET_IDS.api);
  return {
    name: "secrets.APICertSANsController",
    inputs: [
      { ...pointer(OSRootType, SECRET_IDS.os), kind: "weak" },
      { ...pointer(HostnameStatusType, HOSTNAME_ID), kind: "weak" },
      { namespace: NETWORK_NS, type: NodeAddressType.type, id: NODE_ADDRESS.accumulativeNoK8s, kind: "weak" },
    ],
    outputs: [{ type: CertSANType.type, kind: "shared" }],
    reconcile(ctx) {
      const root = readSpec(ctx, OSRootType, SECRET_IDS.os);
      if (!root) {
        ctx.destroy(ptr);
        return;
      }
      const hs = readSpec(ctx, HostnameStatusType, HOSTNAME_ID);
      const addrs = readSpec(ctx, NodeAddressType, NODE_ADDRESS.accumulativeNoK8s);
      if (!hs || !addrs) return; // Upstream waits for both rather than publishing a partial set.
      const spec: CertSANSpec = certSANs(
        [...root.certSANIPs, ...nodeAddressIPs(addrs), "127.0.0.1"],
        [...root.certSANDNSNames, hs.hostname, fqdn(hs)],
        fqdn(hs),
      );
      ctx.apply({ ...ptr, spec });
    },
  };
}
