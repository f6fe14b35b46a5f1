/**
 * A DHCPv4 client in the agent itself, for the node's own network (PID 1 of the image, which has no udhcpc and no
 * shell to run its script): DISCOVER → OFFER → REQUEST → ACK over a UDP socket on port 68, replies asked for as
 * broadcasts. Before the link has an address the kernel needs a route to send a limited broadcast through: a
 * `255.255.255.255/32 dev <link>` route is held for the exchange and removed after it. The lease is returned, not
 * applied: callers turn it into address/route/resolver specs (or, at boot, into the early address).
 * A netns target cannot use it (the socket would be in this process's namespace): those use udhcpc.
 */
import dgram from "node:dgram";
import { randomInt } from "node:crypto";
import { readFileSync } from "node:fs";
import { decodeServerReply, DHCP_CLIENT_PORT, DHCP_SERVER_PORT, encodeClientMessage, MessageType, type ServerReply } from "../../machinery/net/dhcp4.js";
import { removeRoute, replaceRoute, setLinkUp, type DhcpLease, type NetTarget, type RouteArgs } from "./apply.js";

export interface Dhcp4Options {
  /** whole exchange, default 10 s (DISCOVER is repeated every 2 s until an OFFER comes) */
  timeoutMs?: number;
  hostname?: string;
  /** the link's MAC; default read from /sys/class/net/<link>/address */
  mac?: string;
  signal?: AbortSignal;
}

const broadcastRoute = (link: string): RouteArgs => ({
  family: "inet4",
  dst: "255.255.255.255/32",
  gateway: "",
  src: "",
  outLinkName: link,
  table: "main",
  priority: 1,
  scope: "link",
  type: "unicast",
  protocol: "boot",
});

export function leaseFromReply(r: ServerReply): DhcpLease {
  return {
    address: `${r.yiaddr}/${r.prefixLength}`,
    routers: r.routers,
    dnsServers: r.dnsServers,
    domain: r.domain,
    hostname: r.hostname,
    ...(r.mtu ? { mtu: r.mtu } : {}),
    leaseSeconds: r.leaseSeconds,
  };
}

/** One lease on `link`; undefined when no server answered in time or the server refused (NAK). */
export async function dhcp4Lease(t: NetTarget, link: string, o: Dhcp4Options = {}): Promise<DhcpLease | undefined> {
  if (t.kind !== "pid1") throw new Error(`the built-in DHCP client serves only this node's own network, not ${t.netns}`);
  const mac = o.mac ?? readFileSync(`/sys/class/net/${link}/address`, "utf8").trim();
  await setLinkUp(t, link, true);
  await replaceRoute(t, broadcastRoute(link));
  const sock = dgram.createSocket({ type: "udp4", reuseAddr: true });
  try {
    await new Promise<void>((resolve, reject) => {
      sock.once("error", reject);
      sock.bind(DHCP_CLIENT_PORT, "0.0.0.0", () => {
        sock.off("error", reject);
        resolve();
      });
    });
    sock.setBroadcast(true);
    const xid = randomInt(1, 0xffffffff);
    const deadline = Date.now() + (o.timeoutMs ?? 10_000);
    const send = (type: typeof MessageType.DISCOVER | typeof MessageType.REQUEST, offer?: ServerReply) =>
      sock.send(encodeClientMessage({ type, xid, mac, hostname: o.hostname, requestedIp: offer?.yiaddr, serverId: offer?.serverId }), DHCP_SERVER_PORT, "255.255.255.255");

    const replies: ServerReply[] = [];
    let wake: (() => void) | undefined;
    sock.on("message", (buf) => {
      const r = decodeServerReply(buf);
      if (r && r.xid === xid && r.mac.toLowerCase() === mac.toLowerCase()) {
        replies.push(r);
        wake?.();
      }
    });
    sock.on("error", () => {}); // a failed send shows as no reply; the deadline ends the exchange
    const next = async (want: number[], resendMs: number, resend: () => void): Promise<ServerReply | undefined> => {
      for (;;) {
        const i = replies.findIndex((r) => want.includes(r.type));
        if (i >= 0) return replies.splice(i, 1)[0];
        const left = deadline - Date.now();
        if (left <= 0 || o.signal?.aborted) return undefined;
        await new Promise<void>((res) => {
          const timer = setTimeout(() => (resend(), res()), Math.min(left, resendMs));
          wake = () => (clearTimeout(timer), res());
        });
      }
    };
    send(MessageType.DISCOVER);
    const offer = await next([MessageType.OFFER], 2000, () => send(MessageType.DISCOVER));
    if (!offer) return undefined;
    send(MessageType.REQUEST, offer);
    const ack = await next([MessageType.ACK, MessageType.NAK], 2000, () => send(MessageType.REQUEST, offer));
    if (!ack || ack.type !== MessageType.ACK) return undefined;
    return leaseFromReply(ack);
  } finally {
    sock.close();
    await removeRoute(t, broadcastRoute(link)).catch(() => {});
  }
}
