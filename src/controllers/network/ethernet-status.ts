/**
 * network.EthernetStatusController: EthernetStatus (`network`/<link>) for every physical Ethernet link (LinkStatus
 * of type `ether` without a virtual kind): carrier, speed, duplex and port as the driver reports them through
 * ethtool. Links whose driver has no ethtool support get no status, as upstream. Re-read periodically: carrier
 * and speed change without a LinkStatus change.
 */
import { readEthtool, type EthtoolInfo } from "../../host/net/ethtool.js";
import { LinkStatusType, NETWORK_NS } from "../../machinery/resources/types/network.js";
import { EthernetStatusType, type DuplexName, type EthernetStatusSpec, type PortName } from "../../machinery/resources/types/network-extra.js";
import type { Controller } from "../../state/runtime/index.js";
import { readAll } from "../../machinery/resources/read.js";

export interface EthernetStatusOptions {
  /** ethtool source; default the kernel's (host/net/ethtool.ts). */
  read?: (link: string) => EthtoolInfo | undefined;
  refreshMs?: number;
}

const PORTS: Record<number, PortName> = { 0: "TwistedPair", 1: "AUI", 2: "MII", 3: "", 4: "BNC", 5: "DirectAttach", 0xef: "None", 0xff: "Other" };
const DUPLEX: Record<number, DuplexName> = { 0: "Half", 1: "Full", 0xff: "Unknown" };

export function ethernetSpec(info: EthtoolInfo): EthernetStatusSpec {
  return {
    ...(info.linkState !== undefined ? { linkState: info.linkState } : {}),
    ...(info.speedMbit !== undefined ? { speedMbit: info.speedMbit } : {}),
    port: PORTS[info.port] ?? "Other",
    duplex: DUPLEX[info.duplex] ?? "Unknown",
  };
}

export function ethernetStatusController(opts: EthernetStatusOptions = {}): Controller {
  const read = opts.read ?? readEthtool;
  return {
    name: "network.EthernetStatusController",
    inputs: [{ namespace: NETWORK_NS, type: LinkStatusType.type, kind: "weak" }],
    outputs: [{ type: EthernetStatusType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const keep: string[] = [];
      for (const r of readAll(ctx, LinkStatusType)) {
        const link = r.spec;
        if (link.type !== "ether" || link.kind !== "") continue;
        let info: EthtoolInfo | undefined;
        try {
          info = read(r.metadata.id);
        } catch (err) {
          ctx.log("ethtool failed", { link: r.metadata.id, error: (err as Error).message });
        }
        if (!info) continue;
        ctx.apply({ namespace: NETWORK_NS, type: EthernetStatusType.type, id: r.metadata.id, spec: ethernetSpec(info) });
        keep.push(r.metadata.id);
      }
      ctx.cleanup(NETWORK_NS, EthernetStatusType.type, keep);
      return { requeueAfterMs: opts.refreshMs ?? 30_000 };
    },
  };
}
