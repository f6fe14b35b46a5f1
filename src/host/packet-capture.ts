/**
 * Packet capture on one interface through an AF_PACKET raw socket (koffi: socket, bind, setsockopt, recv, ioctl),
 * for `talosctl pcap`: an optional classic BPF filter (what `tcpdump -dd` prints), optional promiscuous mode
 * (dropped with the socket), frames cut at the snap length, kernel receive timestamps. The socket is non-blocking
 * and drained by the caller on a short timer, so nothing blocks the event loop or a libuv worker.
 *
 * Output helpers write the classic pcap format (microsecond timestamps), which talosctl decodes or saves.
 */
import { createRequire } from "node:module";

export interface BpfInstruction {
  op: number;
  jt: number;
  jf: number;
  k: number;
}

export interface CaptureOptions {
  ifindex: number;
  promiscuous: boolean;
  /** Bytes kept of each frame. */
  snapLen: number;
  filter?: BpfInstruction[];
}

export interface CapturedPacket {
  /** Kernel receive time, ms since the epoch (fractional). */
  timeMs: number;
  /** The first `snapLen` bytes. */
  data: Buffer;
  /** Length on the wire. */
  length: number;
}

const AF_PACKET = 17;
const SOCK_RAW = 3;
const SOCK_NONBLOCK = 0o4000;
const SOCK_CLOEXEC = 0o2000000;
const ETH_P_ALL_BE = 0x0300; // htons(ETH_P_ALL = 0x0003)
const SOL_SOCKET = 1;
const SO_RCVBUF = 8;
const SO_ATTACH_FILTER = 26;
const SOL_PACKET = 263;
const PACKET_ADD_MEMBERSHIP = 1;
const PACKET_MR_PROMISC = 1;
const MSG_DONTWAIT = 0x40;
const MSG_TRUNC = 0x20;
const SIOCGSTAMP = 0x8906;
const EAGAIN = 11;

interface Bindings {
  socket(d: number, t: number, p: number): number;
  bind(fd: number, addr: Buffer, len: number): number;
  setsockopt(fd: number, level: number, name: number, val: Buffer, len: number): number;
  setFilter(fd: number, prog: { len: number; filter: Buffer }): number;
  recv(fd: number, buf: Buffer, len: number, flags: number): number;
  ioctl(fd: number, req: number, arg: Buffer): number;
  close(fd: number): number;
  errno(): number;
}

let bindings: Bindings | undefined;

function load(): Bindings {
  if (bindings) return bindings;
  const koffi = createRequire(import.meta.url)("koffi") as {
    load(p: null): { func(d: string): (...a: unknown[]) => unknown };
    struct(name: string, def: Record<string, string>): unknown;
    errno(): number;
  };
  const lib = koffi.load(null);
  koffi.struct("machined_sock_fprog", { len: "uint16", filter: "void *" });
  const socket = lib.func("int socket(int domain, int type, int protocol)");
  const bind = lib.func("int bind(int fd, const void *addr, uint32_t len)");
  const setsockopt = lib.func("int setsockopt(int fd, int level, int name, const void *val, uint32_t len)");
  const setFilter = lib.func("int setsockopt(int fd, int level, int name, const machined_sock_fprog *prog, uint32_t len)");
  const recv = lib.func("long recv(int fd, _Out_ void *buf, size_t len, int flags)");
  const ioctl = lib.func("int ioctl(int fd, unsigned long request, _Out_ void *arg)");
  const close = lib.func("int close(int fd)");
  bindings = {
    socket: (d, t, p) => socket(d, t, p) as number,
    bind: (fd, a, l) => bind(fd, a, l) as number,
    setsockopt: (fd, lv, n, v, l) => setsockopt(fd, lv, n, v, l) as number,
    // struct sock_fprog is 16 bytes on 64-bit: u16 len, padding, pointer.
    setFilter: (fd, prog) => setFilter(fd, SOL_SOCKET, SO_ATTACH_FILTER, prog, 16) as number,
    recv: (fd, b, l, f) => Number(recv(fd, b, l, f)),
    ioctl: (fd, r, a) => ioctl(fd, r, a) as number,
    close: (fd) => close(fd) as number,
    errno: () => koffi.errno(),
  };
  return bindings;
}

/** Frames longer than this are still counted at their real length; only this much of each is copied out. */
const MAX_FRAME = 256 * 1024;

export class PacketCapture {
  private closed = false;
  private readonly buf: Buffer;
  private readonly stamp = Buffer.alloc(16);
  captured = 0;

  private constructor(
    private readonly b: Bindings,
    private readonly fd: number,
    private readonly snapLen: number,
  ) {
    this.buf = Buffer.alloc(Math.min(Math.max(snapLen, 64), MAX_FRAME));
  }

  static open(o: CaptureOptions): PacketCapture {
    const b = load();
    const fd = b.socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, ETH_P_ALL_BE);
    if (fd < 0) throw new Error(`error creating afpacket handle: socket: ${errnoText(b.errno())}`);
    const fail = (what: string): never => {
      const e = b.errno();
      b.close(fd);
      throw new Error(`${what}: ${errnoText(e)}`);
    };
    // Attach the filter before binding, so nothing unfiltered is queued in between.
    if (o.filter && o.filter.length > 0) {
      const prog = Buffer.alloc(8 * o.filter.length);
      o.filter.forEach((ins, i) => {
        prog.writeUInt16LE(ins.op & 0xffff, i * 8);
        prog.writeUInt8(ins.jt & 0xff, i * 8 + 2);
        prog.writeUInt8(ins.jf & 0xff, i * 8 + 3);
        prog.writeUInt32LE(ins.k >>> 0, i * 8 + 4);
      });
      if (b.setFilter(fd, { len: o.filter.length, filter: prog }) !== 0) fail("error setting BPF filter");
    }
    const rcvbuf = Buffer.alloc(4);
    rcvbuf.writeInt32LE(4 << 20);
    b.setsockopt(fd, SOL_SOCKET, SO_RCVBUF, rcvbuf, 4); // best effort: the default queue is small
    // struct sockaddr_ll: family u16, protocol be16, ifindex i32, hatype u16, pkttype u8, halen u8, addr[8]
    const sll = Buffer.alloc(20);
    sll.writeUInt16LE(AF_PACKET, 0);
    sll.writeUInt16LE(ETH_P_ALL_BE, 2);
    sll.writeInt32LE(o.ifindex, 4);
    if (b.bind(fd, sll, sll.length) !== 0) fail("error creating afpacket handle: bind");
    if (o.promiscuous) {
      // struct packet_mreq: ifindex i32, type u16, alen u16, address[8]
      const mreq = Buffer.alloc(16);
      mreq.writeInt32LE(o.ifindex, 0);
      mreq.writeUInt16LE(PACKET_MR_PROMISC, 4);
      if (b.setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq, mreq.length) !== 0) fail("error setting promiscuous mode true");
    }
    return new PacketCapture(b, fd, o.snapLen);
  }

  /** Everything queued right now (never blocks). */
  drain(max = 10_000): CapturedPacket[] {
    const out: CapturedPacket[] = [];
    while (!this.closed && out.length < max) {
      const n = this.b.recv(this.fd, this.buf, this.buf.length, MSG_DONTWAIT | MSG_TRUNC);
      if (n < 0) {
        const e = this.b.errno();
        if (e === EAGAIN) break;
        throw new Error(`pcap: recv: ${errnoText(e)}`);
      }
      let timeMs = Date.now();
      if (this.b.ioctl(this.fd, SIOCGSTAMP, this.stamp) === 0) {
        timeMs = Number(this.stamp.readBigInt64LE(0)) * 1000 + Number(this.stamp.readBigInt64LE(8)) / 1000;
      }
      const kept = Math.min(n, this.snapLen, this.buf.length);
      out.push({ timeMs, data: Buffer.from(this.buf.subarray(0, kept)), length: n });
      this.captured++;
    }
    return out;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.b.close(this.fd);
  }
}

const ERRNO: Record<number, string> = { 1: "operation not permitted", 13: "permission denied", 19: "no such device", 22: "invalid argument", 97: "address family not supported by protocol" };
const errnoText = (e: number) => ERRNO[e] ?? `errno ${e}`;

export const LINKTYPE_ETHERNET = 1;
export const LINKTYPE_RAW = 101;

/** The pcap global header (magic a1b2c3d4: microsecond timestamps, version 2.4), little-endian. */
export function pcapHeader(snapLen: number, linkType: number): Buffer {
  const h = Buffer.alloc(24);
  h.writeUInt32LE(0xa1b2c3d4, 0);
  h.writeUInt16LE(2, 4);
  h.writeUInt16LE(4, 6);
  h.writeInt32LE(0, 8);
  h.writeUInt32LE(0, 12);
  h.writeUInt32LE(snapLen, 16);
  h.writeUInt32LE(linkType, 20);
  return h;
}

/** One pcap record: timestamp, captured and original length, then the bytes. */
export function pcapRecord(p: CapturedPacket): Buffer {
  const h = Buffer.alloc(16);
  const sec = Math.floor(p.timeMs / 1000);
  h.writeUInt32LE(sec >>> 0, 0);
  h.writeUInt32LE(Math.min(999_999, Math.round((p.timeMs - sec * 1000) * 1000)), 4);
  h.writeUInt32LE(p.data.length, 8);
  h.writeUInt32LE(p.length, 12);
  return Buffer.concat([h, p.data]);
}
