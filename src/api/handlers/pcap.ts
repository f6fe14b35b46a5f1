/**
 * MachineService/PacketCapture (`talosctl pcap`): a pcap stream of one interface (host/packet-capture.ts) until
 * the client goes away (talosctl's --duration is a deadline on the call). As upstream: the interface must be a
 * known link (NotFound otherwise), Ethernet and loopback links give Ethernet frames, links without a link layer
 * raw IP, anything else is refused; the snap length defaults to 4096.
 */
import type { PacketCaptureRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import { ApiError, Code, invalidArgument, notFound } from "../../machinery/errors.js";
import { LinkStatusType } from "../../machinery/resources/types/network.js";
import { readSpec } from "../../machinery/resources/read.js";
import { LINKTYPE_ETHERNET, LINKTYPE_RAW, PacketCapture, pcapHeader, pcapRecord } from "../../host/packet-capture.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";

/** gopacket's afpacket default frame size, upstream's snap length when none is asked for. */
export const DEFAULT_SNAP_LEN = 4096;
/** How often queued packets are drained and sent. */
const DRAIN_MS = 20;

export function pcapHandlers(deps: ApiDeps): Handlers {
  return {
    PacketCapture: async (req: PacketCaptureRequest, send: (m: { bytes: Uint8Array }) => Promise<void>, ctx: CallContext) => {
      const link = readSpec(deps.state, LinkStatusType, req.interface);
      if (!link) throw notFound(`interface ${JSON.stringify(req.interface)} not found`);
      let linkType: number;
      if (link.type === "ether" || link.type === "loopback") linkType = LINKTYPE_ETHERNET;
      else if (link.type === "none") linkType = LINKTYPE_RAW;
      else throw invalidArgument(`unsupported link type ${link.type}`);
      const snapLen = req.snapLen || DEFAULT_SNAP_LEN;
      let cap: PacketCapture;
      try {
        cap = PacketCapture.open({ ifindex: link.index, promiscuous: req.promiscuous, snapLen, filter: req.bpfFilter });
      } catch (err) {
        throw new ApiError(Code.Unknown, (err as Error).message);
      }
      try {
        await send({ bytes: pcapHeader(snapLen, linkType) });
        while (!ctx.signal.aborted) {
          const packets = cap.drain();
          if (packets.length > 0) await send({ bytes: Buffer.concat(packets.map(pcapRecord)) });
          else await new Promise((r) => setTimeout(r, DRAIN_MS));
        }
      } catch (err) {
        // The client went away (deadline or Ctrl-C) while we were sending: the capture is simply over.
        if (!ctx.signal.aborted) throw err;
      } finally {
        cap.close();
        deps.log.info(`pcap: packets captured ${cap.captured} on ${req.interface}`);
      }
    },
  };
}
