/**
 * MachineService/Netstat (`talosctl netstat`): the node's sockets from the kernel's tables (host/netstat.ts),
 * filtered as upstream filters them — listening = no remote address and port, connected = both set — for the
 * requested protocols and network namespaces, with owning processes when asked.
 */
import { NetstatRequest_Filter as Filter, type NetstatRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import { invalidArgument } from "../../machinery/errors.js";
import { netstat, type Protocol, type SocketEntry } from "../../host/netstat.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";
import { one } from "../reply.js";

const unspecified = (ip: string) => ip === "0.0.0.0" || ip === "::";

function accept(filter: Filter): (e: SocketEntry) => boolean {
  switch (filter) {
    case Filter.ALL:
      return () => true;
    case Filter.LISTENING:
      return (e) => unspecified(e.remoteIP) && e.remotePort === 0;
    case Filter.CONNECTED:
      return (e) => !unspecified(e.remoteIP) && e.remotePort !== 0;
    default:
      throw invalidArgument(`invalid filter: ${filter}`);
  }
}

export function netstatHandlers(_deps: ApiDeps): Handlers {
  return {
    Netstat: async (req: NetstatRequest, ctx: CallContext) => {
      const keep = accept(req.filter);
      const l4 = req.l4proto;
      const protocols = (
        [
          ["tcp", l4?.tcp],
          ["tcp6", l4?.tcp6],
          ["udp", l4?.udp],
          ["udp6", l4?.udp6],
          ["udplite", l4?.udplite],
          ["udplite6", l4?.udplite6],
          ["raw", l4?.raw],
          ["raw6", l4?.raw6],
        ] as [Protocol, boolean | undefined][]
      )
        .filter(([, on]) => on)
        .map(([p]) => p);
      const entries = netstat({
        protocols,
        hostNetwork: req.netns?.hostnetwork ?? false,
        netns: req.netns?.netns ?? [],
        allNetns: req.netns?.allnetns ?? false,
        pid: req.feature?.pid ?? false,
      }).filter(keep);
      const connectrecord = entries.map((e) => ({
        l4proto: e.protocol,
        localip: e.localIP,
        localport: e.localPort,
        remoteip: e.remoteIP,
        remoteport: e.remotePort,
        state: e.state,
        txqueue: BigInt(e.txQueue),
        rxqueue: BigInt(e.rxQueue),
        tr: e.timerActive,
        timerwhen: BigInt(e.timerWhen),
        retrnsmt: BigInt(e.retransmits),
        uid: e.uid,
        timeout: BigInt(e.timeout),
        inode: BigInt(e.inode),
        ref: BigInt(e.ref),
        pointer: e.pointer,
        process: e.process ? { pid: e.process.pid, name: e.process.name } : {},
        netns: e.netns,
      }));
      return one(ctx, { connectrecord });
    },
  };
}
