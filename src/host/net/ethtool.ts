/**
 * Ethernet link facts through the kernel's ethtool ioctl (SIOCETHTOOL: ETHTOOL_GSET for speed, duplex and port,
 * ETHTOOL_GLINK for the carrier), on a throw-away datagram socket, through koffi. What upstream's
 * EthernetStatusController reads (over ethtool netlink) for physical links.
 */
import { createRequire } from "node:module";

export interface EthtoolInfo {
  /** Carrier; undefined when the driver does not say. */
  linkState?: boolean;
  /** Mbit/s; undefined when unknown (SPEED_UNKNOWN). */
  speedMbit?: number;
  /** Kernel DUPLEX_* value: 0 half, 1 full, 0xff unknown. */
  duplex: number;
  /** Kernel PORT_* value (0 TP, 1 AUI, 2 MII, 3 FIBRE, 4 BNC, 5 DA, 0xef none, 0xff other). */
  port: number;
}

const SIOCETHTOOL = 0x8946;
const ETHTOOL_GSET = 0x1;
const ETHTOOL_GLINK = 0xa;
const AF_INET = 2;
const SOCK_DGRAM = 2;

interface Bindings {
  socket(domain: number, type: number, proto: number): number;
  close(fd: number): number;
  ioctl(fd: number, req: number, ifr: { name: number[]; data: Buffer; pad: number[] }): number;
  errno(): number;
}

let bindings: Bindings | undefined;

function load(): Bindings {
  if (bindings) return bindings;
  const koffi = createRequire(import.meta.url)("koffi") as {
    load(p: null): { func(d: string): (...a: unknown[]) => unknown };
    struct(name: string, def: Record<string, unknown>): unknown;
    array(t: string, n: number, hint?: string): unknown;
    errno(): number;
  };
  const lib = koffi.load(null);
  // struct ifreq: char ifr_name[16]; union { void *ifr_data; ... } padded to 24 bytes.
  koffi.struct("machined_ifreq_ethtool", { name: koffi.array("char", 16, "Array"), data: "void *", pad: koffi.array("uint8", 16) });
  const socket = lib.func("int socket(int domain, int type, int protocol)");
  const close = lib.func("int close(int fd)");
  const ioctl = lib.func("int ioctl(int fd, unsigned long request, _Inout_ machined_ifreq_ethtool *ifr)");
  bindings = {
    socket: (d, t, p) => socket(d, t, p) as number,
    close: (fd) => close(fd) as number,
    ioctl: (fd, req, ifr) => ioctl(fd, req, ifr) as number,
    errno: () => koffi.errno(),
  };
  return bindings;
}

function ifreq(name: string, data: Buffer) {
  const bytes = Buffer.alloc(16);
  bytes.write(name.slice(0, 15), "latin1");
  return { name: Array.from(bytes), data, pad: new Array<number>(16).fill(0) };
}

/** Ethernet facts of `ifname`, or undefined when the driver has no ethtool support (or there is no such link). */
export function readEthtool(ifname: string): EthtoolInfo | undefined {
  const b = load();
  const fd = b.socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) throw new Error(`socket: errno ${b.errno()}`);
  try {
    // struct ethtool_cmd (44 bytes): cmd, supported, advertising, speed(u16 @12), duplex(@14), port(@15), ..., speed_hi(u16 @28)
    const cmd = Buffer.alloc(44);
    cmd.writeUInt32LE(ETHTOOL_GSET, 0);
    if (b.ioctl(fd, SIOCETHTOOL, ifreq(ifname, cmd)) !== 0) return undefined;
    const speed = (cmd.readUInt16LE(28) << 16) | cmd.readUInt16LE(12);
    const info: EthtoolInfo = { duplex: cmd[14], port: cmd[15] };
    if (speed !== 0xffffffff && speed !== 0 && speed >>> 0 !== 0xffffffff) info.speedMbit = speed >>> 0;
    // struct ethtool_value: cmd, data
    const link = Buffer.alloc(8);
    link.writeUInt32LE(ETHTOOL_GLINK, 0);
    if (b.ioctl(fd, SIOCETHTOOL, ifreq(ifname, link)) === 0) info.linkState = link.readUInt32LE(4) !== 0;
    return info;
  } finally {
    b.close(fd);
  }
}
