/**
 * Sockets as the kernel lists them in /proc/net/{tcp,tcp6,udp,udp6,udplite,udplite6,raw,raw6}, with the owning
 * process (pid/comm, found through the socket inodes in /proc/<pid>/fd), for `talosctl netstat`.
 *
 * Other network namespaces (named ones under /run/netns) are read by entering them for the duration of a few
 * synchronous reads (setns(2) through koffi on this thread, then back): /proc/thread-self/net shows the namespace
 * of the reading thread, and nothing else runs on the thread meanwhile.
 */
import { openSync, closeSync, readFileSync, readdirSync, readlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

export const PROTOCOLS = ["tcp", "tcp6", "udp", "udp6", "udplite", "udplite6", "raw", "raw6"] as const;
export type Protocol = (typeof PROTOCOLS)[number];

export interface SocketEntry {
  protocol: Protocol;
  localIP: string;
  localPort: number;
  remoteIP: string;
  remotePort: number;
  /** Kernel state number (TCP_ESTABLISHED = 1 ... TCP_CLOSING = 11; 7 = CLOSE for unconnected UDP/raw). */
  state: number;
  txQueue: number;
  rxQueue: number;
  timerActive: number;
  timerWhen: number;
  retransmits: number;
  uid: number;
  timeout: number;
  inode: number;
  ref: number;
  pointer: bigint;
  process?: { pid: number; name: string };
  /** The named network namespace the socket lives in; "" for the host's (our own). */
  netns: string;
}

/** IPv4 text from /proc/net's host-order hex (little-endian machines: "0100007F" is 127.0.0.1). */
function ipv4(hex: string): string {
  const n = parseInt(hex, 16);
  return [n & 255, (n >>> 8) & 255, (n >>> 16) & 255, n >>> 24].join(".");
}

/** IPv6 text from 32 hex digits (four host-order words), printed as Go prints net.IP (v4-mapped in dotted form). */
function ipv6(hex: string): string {
  const bytes: number[] = [];
  for (let w = 0; w < 4; w++) {
    const word = parseInt(hex.slice(w * 8, w * 8 + 8), 16);
    bytes.push(word & 255, (word >>> 8) & 255, (word >>> 16) & 255, word >>> 24);
  }
  if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) return bytes.slice(12).join(".");
  const words = Array.from({ length: 8 }, (_, i) => (bytes[2 * i] << 8) | bytes[2 * i + 1]);
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  const h = words.map((x) => x.toString(16));
  return best < 0 ? h.join(":") : `${h.slice(0, best).join(":")}::${h.slice(best + bestLen).join(":")}`;
}

function endpoint(text: string, v6: boolean): [string, number] {
  const [addr, port] = text.split(":");
  return [v6 ? ipv6(addr) : ipv4(addr), parseInt(port, 16)];
}

/** Parses one /proc/net table (the first line is the header). */
export function parseSocketTable(protocol: Protocol, text: string, netns = ""): SocketEntry[] {
  const v6 = protocol.endsWith("6");
  const out: SocketEntry[] = [];
  for (const line of text.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10 || !f[0].endsWith(":")) continue;
    const [localIP, localPort] = endpoint(f[1], v6);
    const [remoteIP, remotePort] = endpoint(f[2], v6);
    const [tx, rx] = f[4].split(":");
    const [tr, when] = f[5].split(":");
    out.push({
      protocol,
      localIP,
      localPort,
      remoteIP,
      remotePort,
      state: parseInt(f[3], 16),
      txQueue: parseInt(tx, 16),
      rxQueue: parseInt(rx, 16),
      timerActive: parseInt(tr, 16),
      timerWhen: parseInt(when, 16),
      retransmits: parseInt(f[6], 16),
      uid: Number(f[7]),
      timeout: Number(f[8]),
      inode: Number(f[9]),
      ref: Number(f[10] ?? 0),
      pointer: f[11] ? BigInt(`0x${f[11]}`) : 0n,
      netns,
    });
  }
  return out;
}

/** socket inode → owning process, from /proc/<pid>/fd links (`socket:[inode]`). */
export function socketOwners(procRoot = "/proc"): Map<number, { pid: number; name: string }> {
  const owners = new Map<number, { pid: number; name: string }>();
  let pids: string[];
  try {
    pids = readdirSync(procRoot).filter((e) => /^\d+$/.test(e));
  } catch {
    return owners;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(join(procRoot, pid, "fd"));
    } catch {
      continue; // gone, or not ours to read
    }
    let name: string | undefined;
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(join(procRoot, pid, "fd", fd));
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (!m) continue;
      name ??= (() => {
        try {
          return readFileSync(join(procRoot, pid, "comm"), "utf8").trim();
        } catch {
          return "";
        }
      })();
      if (!owners.has(Number(m[1]))) owners.set(Number(m[1]), { pid: Number(pid), name });
    }
  }
  return owners;
}

function readTables(protocols: readonly Protocol[], dir: string, netns: string): SocketEntry[] {
  const out: SocketEntry[] = [];
  for (const p of protocols) {
    let text: string;
    try {
      text = readFileSync(join(dir, p), "utf8");
    } catch {
      continue; // protocol not compiled in (e.g. udplite), or no IPv6
    }
    out.push(...parseSocketTable(p, text, netns));
  }
  return out;
}

const CLONE_NEWNET = 0x40000000;
let setnsFn: ((fd: number, type: number) => number) | undefined;
let errnoFn: (() => number) | undefined;

function setns(fd: number): void {
  if (!setnsFn) {
    const koffi = createRequire(import.meta.url)("koffi") as { load(p: null): { func(d: string): (...a: unknown[]) => unknown }; errno(): number };
    const f = koffi.load(null).func("int setns(int fd, int nstype)");
    setnsFn = (a, b) => f(a, b) as number;
    errnoFn = () => koffi.errno();
  }
  if (setnsFn(fd, CLONE_NEWNET) !== 0) throw new Error(`setns: errno ${errnoFn!()}`);
}

/** The tables of a named network namespace (`/run/netns/<name>`), read from inside it. */
function readNetns(protocols: readonly Protocol[], name: string, netnsDir: string): SocketEntry[] {
  const own = openSync("/proc/thread-self/ns/net", "r");
  let target: number | undefined;
  try {
    target = openSync(join(netnsDir, name), "r");
    setns(target);
    try {
      return readTables(protocols, "/proc/thread-self/net", name);
    } finally {
      setns(own);
    }
  } finally {
    if (target !== undefined) closeSync(target);
    closeSync(own);
  }
}

export interface NetstatQuery {
  protocols: readonly Protocol[];
  /** Include the host's (our own) namespace. */
  hostNetwork: boolean;
  /** Named namespaces to include. */
  netns?: string[];
  /** Every named namespace. */
  allNetns?: boolean;
  /** Resolve owning processes. */
  pid?: boolean;
  /** Where named namespaces live; default /run/netns. */
  netnsDir?: string;
  /** Our own /proc/net; default /proc/thread-self/net. */
  netDir?: string;
}

export function netstat(q: NetstatQuery): SocketEntry[] {
  const netnsDir = q.netnsDir ?? "/run/netns";
  const out: SocketEntry[] = [];
  if (q.hostNetwork) out.push(...readTables(q.protocols, q.netDir ?? "/proc/thread-self/net", ""));
  const names = new Set(q.netns ?? []);
  if (q.allNetns) {
    try {
      for (const n of readdirSync(netnsDir)) names.add(n);
    } catch {
      // no named namespaces
    }
  }
  for (const n of names) {
    if (!/^[A-Za-z0-9_.-]+$/.test(n) || n === "." || n === "..") throw new Error(`invalid network namespace name ${JSON.stringify(n)}`);
    out.push(...readNetns(q.protocols, n, netnsDir));
  }
  if (q.pid) {
    const owners = socketOwners();
    for (const e of out) {
      const p = owners.get(e.inode);
      if (p) e.process = p;
    }
  }
  return out;
}
