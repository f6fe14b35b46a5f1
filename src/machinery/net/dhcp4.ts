/**
 * DHCPv4 messages (RFC 2131, options from RFC 2132): what a client sends (DISCOVER, REQUEST) and what it reads from
 * a server's OFFER/ACK/NAK. Pure: the socket lives in src/host/net/dhcp4-client.ts. The client always asks for
 * broadcast replies (flag 0x8000): before it is bound it has no address a unicast reply could reach.
 */

export const DHCP_SERVER_PORT = 67;
export const DHCP_CLIENT_PORT = 68;
const MAGIC = [99, 130, 83, 99];

export const MessageType = { DISCOVER: 1, OFFER: 2, REQUEST: 3, DECLINE: 4, ACK: 5, NAK: 6, RELEASE: 7 } as const;

const OPT = {
  SUBNET_MASK: 1,
  ROUTER: 3,
  DNS: 6,
  HOSTNAME: 12,
  DOMAIN: 15,
  MTU: 26,
  REQUESTED_IP: 50,
  LEASE_TIME: 51,
  MESSAGE_TYPE: 53,
  SERVER_ID: 54,
  PARAMS: 55,
  CLIENT_ID: 61,
  END: 255,
  PAD: 0,
} as const;

export interface ClientMessage {
  type: typeof MessageType.DISCOVER | typeof MessageType.REQUEST;
  xid: number;
  /** six bytes, `52:54:00:12:34:56` */
  mac: string;
  /** REQUEST after an OFFER: the offered address and the server that made it */
  requestedIp?: string;
  serverId?: string;
  hostname?: string;
}

export interface ServerReply {
  type: number;
  xid: number;
  mac: string;
  yiaddr: string;
  serverId?: string;
  /** prefix length from the subnet mask option (32 without it) */
  prefixLength: number;
  routers: string[];
  dnsServers: string[];
  domain: string;
  hostname: string;
  mtu?: number;
  leaseSeconds: number;
}

export function macBytes(mac: string): number[] {
  const parts = mac.split(":");
  if (parts.length !== 6 || parts.some((p) => !/^[0-9a-fA-F]{2}$/.test(p))) throw new Error(`invalid MAC address ${JSON.stringify(mac)}`);
  return parts.map((p) => parseInt(p, 16));
}

function ipBytes(ip: string): number[] {
  const parts = ip.split(".").map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) throw new Error(`invalid IPv4 address ${JSON.stringify(ip)}`);
  return parts;
}

const ipText = (b: Uint8Array, off = 0) => `${b[off]}.${b[off + 1]}.${b[off + 2]}.${b[off + 3]}`;

export function encodeClientMessage(m: ClientMessage): Buffer {
  const head = Buffer.alloc(236);
  head[0] = 1; // BOOTREQUEST
  head[1] = 1; // ethernet
  head[2] = 6;
  head.writeUInt32BE(m.xid >>> 0, 4);
  head.writeUInt16BE(0x8000, 10); // broadcast replies
  Buffer.from(macBytes(m.mac)).copy(head, 28);
  const opts: number[] = [...MAGIC, OPT.MESSAGE_TYPE, 1, m.type];
  opts.push(OPT.CLIENT_ID, 7, 1, ...macBytes(m.mac));
  if (m.requestedIp) opts.push(OPT.REQUESTED_IP, 4, ...ipBytes(m.requestedIp));
  if (m.serverId) opts.push(OPT.SERVER_ID, 4, ...ipBytes(m.serverId));
  if (m.hostname) {
    const h = Buffer.from(m.hostname.slice(0, 63), "ascii");
    opts.push(OPT.HOSTNAME, h.length, ...h);
  }
  opts.push(OPT.PARAMS, 7, OPT.SUBNET_MASK, OPT.ROUTER, OPT.DNS, OPT.HOSTNAME, OPT.DOMAIN, OPT.MTU, OPT.LEASE_TIME);
  opts.push(OPT.END);
  const body = Buffer.from(opts);
  // some servers ignore BOOTP messages shorter than 300 bytes
  return Buffer.concat([head, body, Buffer.alloc(Math.max(0, 300 - head.length - body.length))]);
}

function maskBits(mask: Uint8Array): number {
  let n = 0;
  for (const byte of mask) for (let bit = 7; bit >= 0; bit--) if (byte & (1 << bit)) n++;
  return n;
}

/** A server's reply; undefined for anything that is not a well-formed BOOTREPLY (other traffic on port 68). */
export function decodeServerReply(buf: Uint8Array): ServerReply | undefined {
  if (buf.length < 240 || buf[0] !== 2 || buf[1] !== 1 || buf[2] !== 6) return undefined;
  if (MAGIC.some((v, i) => buf[236 + i] !== v)) return undefined;
  const view = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const r: ServerReply = {
    type: 0,
    xid: view.readUInt32BE(4),
    mac: [...buf.subarray(28, 34)].map((b) => b.toString(16).padStart(2, "0")).join(":"),
    yiaddr: ipText(buf, 16),
    prefixLength: 32,
    routers: [],
    dnsServers: [],
    domain: "",
    hostname: "",
    leaseSeconds: 0,
  };
  const ips = (v: Uint8Array) => Array.from({ length: Math.floor(v.length / 4) }, (_, i) => ipText(v, i * 4));
  for (let i = 240; i < buf.length; ) {
    const code = buf[i];
    if (code === OPT.END) break;
    if (code === OPT.PAD) {
      i++;
      continue;
    }
    if (i + 1 >= buf.length) return undefined;
    const len = buf[i + 1];
    if (i + 2 + len > buf.length) return undefined;
    const v = buf.subarray(i + 2, i + 2 + len);
    i += 2 + len;
    switch (code) {
      case OPT.MESSAGE_TYPE:
        r.type = v[0] ?? 0;
        break;
      case OPT.SUBNET_MASK:
        if (len === 4) r.prefixLength = maskBits(v);
        break;
      case OPT.ROUTER:
        r.routers = ips(v);
        break;
      case OPT.DNS:
        r.dnsServers = ips(v);
        break;
      case OPT.DOMAIN:
        r.domain = Buffer.from(v).toString("ascii").replace(/\0+$/, "");
        break;
      case OPT.HOSTNAME:
        r.hostname = Buffer.from(v).toString("ascii").replace(/\0+$/, "");
        break;
      case OPT.MTU:
        if (len === 2) r.mtu = (v[0] << 8) | v[1];
        break;
      case OPT.LEASE_TIME:
        if (len === 4) r.leaseSeconds = Buffer.from(v).readUInt32BE(0);
        break;
      case OPT.SERVER_ID:
        if (len === 4) r.serverId = ipText(v);
        break;
    }
  }
  return r.type ? r : undefined;
}
