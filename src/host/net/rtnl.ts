/**
 * NETLINK_ROUTE sockets through koffi, with no child process:
 *
 * - dumps (links, addresses, routes) are synchronous: the kernel builds a dump inside our recv() calls,
 *   so nothing waits on the outside world; a receive timeout guards against the impossible anyway;
 * - change notifications come from a socket bound to the link/address/route multicast groups and
 *   watched by libuv (koffi.node.poll), so a quiet kernel costs nothing and a change wakes us at once.
 *
 * Another network namespace (`ip netns` name) is entered only around socket(2): the socket stays bound
 * to that namespace, the thread goes straight back to ours.
 */
import { closeSync, openSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import {
  AF_INET,
  AF_INET6,
  AF_UNSPEC,
  IFADDRMSG_LEN,
  IFINFOMSG_LEN,
  MONITOR_GROUPS,
  NLMSG_DONE,
  NLMSG_ERROR,
  NLMSG_OVERRUN,
  RTMSG_LEN,
  RTM_GETADDR,
  RTM_GETLINK,
  RTM_GETROUTE,
  decodeAddress,
  decodeLink,
  decodeRoute,
  dumpRequest,
  errorCode,
  kindsOf,
  splitMessages,
  type NetKind,
  type NlAddress,
  type NlLink,
  type NlRoute,
} from "./netlink.js";

const AF_NETLINK = 16;
const SOCK_RAW = 3;
const SOCK_NONBLOCK = 0o4000;
const SOCK_CLOEXEC = 0o2000000;
const NETLINK_ROUTE = 0;
const SOL_SOCKET = 1;
const SO_RCVBUF = 8;
const SO_RCVTIMEO = 20;
const MSG_DONTWAIT = 0x40;
const MSG_TRUNC = 0x20;
const CLONE_NEWNET = 0x40000000;
const NLM_F_DUMP_INTR = 0x10;
const EINTR = 4;
const EAGAIN = 11;
const ENOBUFS = 105;
const EAFNOSUPPORT = 97;

/** Big enough for any netlink datagram: the kernel caps dump chunks at 32 KiB. */
const RECV_BUF = 64 * 1024;

interface PollHandle {
  start(opts: { readable?: boolean; disconnect?: boolean }, cb: (status: number) => void): void;
  close(): void;
  unref(): void;
}

interface Native {
  socket(domain: number, type: number, protocol: number): number;
  bind(fd: number, addr: Buffer, len: number): number;
  setsockopt(fd: number, level: number, name: number, value: Buffer, len: number): number;
  send(fd: number, buf: Buffer, len: number, flags: number): number;
  recv(fd: number, buf: Buffer, len: number, flags: number): number;
  close(fd: number): number;
  setns(fd: number, nstype: number): number;
  epollCreate(flags: number): number;
  /** epoll_ctl with a 12-byte struct epoll_event. */
  epollCtl(epfd: number, op: number, fd: number, event: Buffer): number;
  errno(): number;
  /** libuv's uv_poll on any descriptor (koffi 2.15+). */
  poll(fd: number, opts: { readable?: boolean; disconnect?: boolean }, cb: (status: number) => void): PollHandle;
}

let loaded: Native | undefined;

/** koffi is loaded on first use, so code that only uses fakes never maps native code. */
export function native(): Native {
  if (loaded) return loaded;
  const koffi = createRequire(import.meta.url)("koffi") as {
    load(p: string | null): { func(decl: string): (...a: unknown[]) => unknown };
    errno(): number;
    node: { poll: Native["poll"] };
  };
  const lib = koffi.load(null);
  const f = (d: string) => lib.func(d);
  const socket = f("int socket(int domain, int type, int protocol)");
  const bind = f("int bind(int fd, const void *addr, uint32_t len)");
  const setsockopt = f("int setsockopt(int fd, int level, int name, const void *value, uint32_t len)");
  const send = f("intptr_t send(int fd, const void *buf, size_t len, int flags)");
  const recv = f("intptr_t recv(int fd, void *buf, size_t len, int flags)");
  const close = f("int close(int fd)");
  const setns = f("int setns(int fd, int nstype)");
  const epollCreate = f("int epoll_create1(int flags)");
  const epollCtl = f("int epoll_ctl(int epfd, int op, int fd, void *event)");
  loaded = {
    socket: (d, t, p) => socket(d, t, p) as number,
    bind: (fd, a, l) => bind(fd, a, l) as number,
    setsockopt: (fd, lv, n, v, l) => setsockopt(fd, lv, n, v, l) as number,
    send: (fd, b, l, fl) => Number(send(fd, b, l, fl)),
    recv: (fd, b, l, fl) => Number(recv(fd, b, l, fl)),
    close: (fd) => close(fd) as number,
    setns: (fd, t) => setns(fd, t) as number,
    epollCreate: (fl) => epollCreate(fl) as number,
    epollCtl: (ep, op, fd, ev) => epollCtl(ep, op, fd, ev) as number,
    errno: () => koffi.errno(),
    poll: (fd, opts, cb) => koffi.node.poll(fd, opts, cb),
  };
  return loaded;
}

const EPOLL_CLOEXEC = 0o2000000;
const EPOLL_CTL_ADD = 1;
const EPOLLRDHUP = 0x2000;

/**
 * Whether epoll accepts `fd`. libuv aborts the process when it cannot register a polled descriptor, so
 * anything that is not a socket (a procfs file) is tried on a private epoll set first.
 */
export function pollable(fd: number): boolean {
  const n = native();
  const ep = n.epollCreate(EPOLL_CLOEXEC);
  if (ep < 0) return false;
  try {
    const ev = Buffer.alloc(12);
    ev.writeUInt32LE(EPOLLRDHUP, 0);
    return n.epollCtl(ep, EPOLL_CTL_ADD, fd, ev) === 0;
  } finally {
    n.close(ep);
  }
}

export class NetlinkError extends Error {
  constructor(
    message: string,
    readonly errno: number,
  ) {
    super(message);
    this.name = "NetlinkError";
  }
}

function fail(n: Native, what: string, netns?: string): never {
  const errno = n.errno();
  throw new NetlinkError(`rtnetlink ${what}${netns ? ` in network namespace ${netns}` : ""}: errno ${errno}`, errno);
}

/** Opens a NETLINK_ROUTE socket, inside `netns` when given (`/var/run/netns/<name>`, as `ip -n`). */
function openSocket(n: Native, flags: number, netns?: string): number {
  if (!netns) {
    const fd = n.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | flags, NETLINK_ROUTE);
    if (fd < 0) fail(n, "socket");
    return fd;
  }
  const file = path.join("/var/run/netns", netns);
  let target: number;
  try {
    target = openSync(file, "r");
  } catch (err) {
    throw new NetlinkError(`network namespace ${netns}: cannot open ${file}: ${(err as Error).message}`, 2);
  }
  const self = openSync("/proc/thread-self/ns/net", "r");
  try {
    if (n.setns(target, CLONE_NEWNET) !== 0) fail(n, "setns", netns);
    const fd = n.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | flags, NETLINK_ROUTE);
    const errno = n.errno();
    // Back to our own namespace before anything else can run on this thread.
    if (n.setns(self, CLONE_NEWNET) !== 0) throw new Error(`rtnetlink: could not return to our own network namespace (errno ${n.errno()})`);
    if (fd < 0) throw new NetlinkError(`rtnetlink socket in network namespace ${netns}: errno ${errno}`, errno);
    return fd;
  } finally {
    closeSync(self);
    closeSync(target);
  }
}

function sockaddr(groups: number): Buffer {
  const sa = Buffer.alloc(12);
  sa.writeUInt16LE(AF_NETLINK, 0);
  sa.writeUInt32LE(groups, 8);
  return sa;
}

function setInt(n: Native, fd: number, name: number, value: number): void {
  const v = Buffer.alloc(4);
  v.writeInt32LE(value, 0);
  n.setsockopt(fd, SOL_SOCKET, name, v, 4);
}

let seqCounter = Math.floor(Math.random() * 0x7fffffff);

/** One dump (all its messages' bodies), retried when the kernel says the table changed mid-dump. */
function dump(n: Native, fd: number, type: number, family: number, headerLen: number, netns?: string): Buffer[] {
  const buf = Buffer.alloc(RECV_BUF);
  for (let attempt = 0; ; attempt++) {
    const seq = (seqCounter = (seqCounter + 1) >>> 0);
    const req = dumpRequest(type, family, headerLen, seq);
    if (n.send(fd, req, req.length, 0) !== req.length) fail(n, "send", netns);
    const bodies: Buffer[] = [];
    let interrupted = false;
    for (let done = false; !done; ) {
      const len = n.recv(fd, buf, buf.length, MSG_TRUNC);
      if (len < 0) {
        const errno = n.errno();
        if (errno === EINTR) continue;
        if (errno === EAGAIN) throw new NetlinkError(`rtnetlink dump (type ${type}) timed out${netns ? ` in ${netns}` : ""}`, errno);
        fail(n, "recv", netns);
      }
      if (len > buf.length) throw new NetlinkError(`rtnetlink dump (type ${type}): datagram of ${len} bytes truncated`, 0);
      for (const msg of splitMessages(buf.subarray(0, len))) {
        if (msg.seq !== seq) continue; // a late reply to an earlier request
        if (msg.flags & NLM_F_DUMP_INTR) interrupted = true;
        if (msg.type === NLMSG_DONE) {
          done = true;
          break;
        }
        if (msg.type === NLMSG_ERROR) {
          const errno = errorCode(msg.body);
          if (errno === 0) continue;
          throw new NetlinkError(`rtnetlink dump (type ${type}, family ${family}): errno ${errno}`, errno);
        }
        if (msg.type === NLMSG_OVERRUN) throw new NetlinkError("rtnetlink dump overrun", ENOBUFS);
        // Copies: the receive buffer is reused for the next datagram.
        bodies.push(Buffer.from(msg.body));
      }
    }
    if (!interrupted || attempt >= 3) return bodies;
  }
}

export interface Dumps {
  links(): NlLink[];
  addresses(): NlAddress[];
  /** Routes of every table; an empty list for a family the kernel does not support. */
  routes(family: typeof AF_INET | typeof AF_INET6): NlRoute[];
}

/** Runs `fn` with a dump socket for `netns` (ours when undefined), closed afterwards. */
export function withDumps<T>(netns: string | undefined, fn: (d: Dumps) => T): T {
  const n = native();
  const fd = openSocket(n, 0, netns);
  try {
    // Dumps never wait on the outside world; five seconds of silence means something is badly wrong.
    const tv = Buffer.alloc(16);
    tv.writeBigInt64LE(5n, 0);
    n.setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, tv, 16);
    if (n.bind(fd, sockaddr(0), 12) !== 0) fail(n, "bind", netns);
    const decodeAll = <R>(bodies: Buffer[], decode: (b: Buffer) => R | undefined) =>
      bodies.map(decode).filter((r): r is R => r !== undefined);
    return fn({
      links: () => decodeAll(dump(n, fd, RTM_GETLINK, AF_UNSPEC, IFINFOMSG_LEN, netns), decodeLink),
      addresses: () => decodeAll(dump(n, fd, RTM_GETADDR, AF_UNSPEC, IFADDRMSG_LEN, netns), decodeAddress),
      routes: (family) => {
        try {
          return decodeAll(dump(n, fd, RTM_GETROUTE, family, RTMSG_LEN, netns), decodeRoute).filter((r) => r.family === family);
        } catch (err) {
          if (err instanceof NetlinkError && err.errno === EAFNOSUPPORT) return [];
          throw err;
        }
      },
    });
  } finally {
    n.close(fd);
  }
}

type Listener = (kinds: ReadonlySet<NetKind>) => void;

const ALL_KINDS: ReadonlySet<NetKind> = new Set(["links", "addresses", "routes"]);

/** One multicast socket per namespace, shared by every subscriber, closed with the last one. */
class Monitor {
  private fd = -1;
  private handle: PollHandle | undefined;
  private readonly onPoll = (status: number) => this.onReadable(status);
  readonly listeners = new Set<Listener>();

  constructor(private readonly netns: string | undefined) {}

  open(): void {
    const n = native();
    this.fd = openSocket(n, SOCK_NONBLOCK, this.netns);
    // Room for a burst (a link going down takes its addresses and routes with it) before ENOBUFS.
    setInt(n, this.fd, SO_RCVBUF, 1 << 20);
    if (n.bind(this.fd, sockaddr(MONITOR_GROUPS), 12) !== 0) {
      n.close(this.fd);
      fail(n, "bind (multicast groups)", this.netns);
    }
    this.handle = n.poll(this.fd, { readable: true }, this.onPoll);
    // The monitor alone must not keep the process alive.
    this.handle.unref();
  }

  private onReadable(status: number): void {
    const n = native();
    const kinds = new Set<NetKind>();
    const buf = Buffer.alloc(RECV_BUF);
    let overrun = status < 0;
    for (;;) {
      const len = n.recv(this.fd, buf, buf.length, MSG_DONTWAIT | MSG_TRUNC);
      if (len < 0) {
        const errno = n.errno();
        if (errno === EINTR) continue;
        // ENOBUFS: notifications were dropped; everything must be looked at again.
        if (errno === ENOBUFS) overrun = true;
        else if (errno !== EAGAIN) overrun = true;
        break;
      }
      if (len === 0) break;
      for (const msg of splitMessages(buf.subarray(0, Math.min(len, buf.length)))) for (const k of kindsOf(msg.type)) kinds.add(k);
    }
    // libuv stops a poll handle that reported an error (the socket's ENOBUFS); start it again.
    if (status < 0) this.handle?.start({ readable: true }, this.onPoll);
    const changed = overrun ? ALL_KINDS : kinds;
    if (changed.size === 0) return;
    for (const l of [...this.listeners]) {
      try {
        l(changed);
      } catch {
        // a listener's failure is its own
      }
    }
  }

  close(): void {
    this.handle?.close();
    this.handle = undefined;
    if (this.fd >= 0) native().close(this.fd);
    this.fd = -1;
  }
}

const monitors = new Map<string, Monitor>();

/**
 * Calls `onChange` with the kinds of kernel state that changed in `netns` (ours when undefined),
 * coalesced per wake-up; returns the unsubscribe function. Throws when the socket cannot be opened.
 */
export function watchKernel(netns: string | undefined, onChange: Listener): () => void {
  const key = netns ?? "";
  let m = monitors.get(key);
  if (!m) {
    m = new Monitor(netns);
    m.open();
    monitors.set(key, m);
  }
  const mon = m;
  mon.listeners.add(onChange);
  return () => {
    if (!mon.listeners.delete(onChange)) return;
    if (mon.listeners.size === 0 && monitors.get(key) === mon) {
      monitors.delete(key);
      mon.close();
    }
  };
}
