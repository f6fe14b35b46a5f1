/**
 * The only code that changes a network: links, addresses, routes (iproute2), the kernel hostname,
 * resolv.conf/hosts files and DHCP leases (busybox udhcpc).
 *
 * Every function takes a NetTarget, and a NetTarget can only come from `netnsTarget(name)` (a named
 * network namespace machined was given) or `pid1Target()` (which refuses unless this process really is
 * PID 1). A local-mode machined therefore cannot touch the host's own network by accident: there is no
 * "default" target, and a hand-made object is rejected at run time.
 */
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { execFile } from "node:child_process";
import { execa } from "execa";
import { hostFiles, writeFileAtomic, type Files } from "../files/index.js";

export type NetTarget =
  | { readonly kind: "netns"; readonly netns: string }
  | { readonly kind: "pid1" };

/** Targets we issued; anything else (a literal `{ kind: "pid1" }`) is refused. */
const issued = new WeakSet<NetTarget>();

const NETNS_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export function netnsTarget(netns: string): NetTarget {
  if (!NETNS_NAME.test(netns)) throw new Error(`invalid network namespace name ${JSON.stringify(netns)}`);
  const t: NetTarget = Object.freeze({ kind: "netns", netns });
  issued.add(t);
  return t;
}

/** The host's own network: only for machined running as PID 1 (the OS image). */
export function pid1Target(pid = process.pid): NetTarget {
  if (pid !== 1) throw new Error(`refusing to manage the host network: machined is not PID 1 (pid ${pid})`);
  const t: NetTarget = Object.freeze({ kind: "pid1" });
  issued.add(t);
  return t;
}

/**
 * The network, hostname and /etc of a local-mode sandbox (src/host/sandbox.ts): the process runs in network and UTS
 * namespaces of its own, so they are managed like PID 1's.
 */
export function sandboxTarget(): NetTarget {
  if (process.env.MACHINED_SANDBOXED !== "1") throw new Error("refusing to manage the host network: not inside a machined sandbox");
  const t: NetTarget = Object.freeze({ kind: "pid1" });
  issued.add(t);
  return t;
}

function check(t: NetTarget): NetTarget {
  if (!issued.has(t)) throw new Error("network target was not created by netnsTarget() or pid1Target()");
  return t;
}

export function describeTarget(t: NetTarget): string {
  return t.kind === "netns" ? `netns ${t.netns}` : "this node's own network (PID 1 or sandbox)";
}

/** Runs `ip [-n NS] ...`; kernel errors come back as the stderr text. */
async function ip(t: NetTarget, args: string[]): Promise<void> {
  check(t);
  const argv = [...(t.kind === "netns" ? ["-n", t.netns] : []), ...args];
  // execFile, not execa: out of descriptors, execa 9 leaves the child's 'error' (spawn EMFILE) unhandled, which
  // kills the process; execFile reports every spawn failure through its callback.
  const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    try {
      execFile("ip", argv, { timeout: 15_000, encoding: "utf8" }, (err, stdout, stderr) =>
        resolve({ code: err ? (typeof (err as { code?: unknown }).code === "number" ? ((err as { code: number }).code) : 1) : 0, stdout: String(stdout ?? ""), stderr: String(stderr ?? (err as Error | null)?.message ?? "") }),
      );
    } catch (err) {
      resolve({ code: 1, stdout: "", stderr: (err as Error).message });
    }
  });
  if (r.code !== 0) throw new NetApplyError(`ip ${argv.join(" ")}: ${(r.stderr || r.stdout).trim()}`, r.stderr);
}

export class NetApplyError extends Error {
  constructor(
    message: string,
    readonly stderr: string,
  ) {
    super(message);
    this.name = "NetApplyError";
  }
}

/** Runs an ip command whose "already done" answer (matching `benign`) counts as success. */
async function ipIdempotent(t: NetTarget, args: string[], benign: RegExp): Promise<void> {
  try {
    await ip(t, args);
  } catch (err) {
    if (err instanceof NetApplyError && benign.test(err.stderr)) return;
    throw err;
  }
}

export async function setLinkUp(t: NetTarget, link: string, up: boolean): Promise<void> {
  await ip(t, ["link", "set", "dev", link, up ? "up" : "down"]);
}

export async function setLinkMtu(t: NetTarget, link: string, mtu: number): Promise<void> {
  if (!Number.isInteger(mtu) || mtu <= 0) throw new Error(`invalid MTU ${mtu} for ${link}`);
  await ip(t, ["link", "set", "dev", link, "mtu", String(mtu)]);
}

export async function createVlan(t: NetTarget, parent: string, name: string, vlanId: number): Promise<void> {
  if (!Number.isInteger(vlanId) || vlanId < 0 || vlanId > 4095) throw new Error(`invalid VLAN id ${vlanId}`);
  await ipIdempotent(t, ["link", "add", "link", parent, "name", name, "type", "vlan", "id", String(vlanId)], /File exists/);
}

/** Deletes a (logical) link machined created. */
export async function deleteLink(t: NetTarget, name: string): Promise<void> {
  await ipIdempotent(t, ["link", "del", "dev", name], /Cannot find device/);
}

/** Adds `prefix` (e.g. `10.250.0.2/24`) to a link; IPv4 gets the computed broadcast like upstream. */
export async function addAddress(t: NetTarget, link: string, prefix: string): Promise<void> {
  const v4 = !prefix.includes(":");
  await ipIdempotent(t, ["addr", "add", prefix, ...(v4 ? ["brd", "+"] : []), "dev", link], /File exists/);
}

export async function removeAddress(t: NetTarget, link: string, prefix: string): Promise<void> {
  await ipIdempotent(t, ["addr", "del", prefix, "dev", link], /Cannot assign requested address|Cannot find device/);
}

export interface RouteArgs {
  family: "inet4" | "inet6";
  /** "" = default route. */
  dst: string;
  gateway: string;
  src: string;
  outLinkName?: string;
  table: string;
  priority: number;
  scope: string;
  type: string;
  protocol: string;
  mtu?: number;
}

/** The selector part shared by replace and delete: what identifies the route in the kernel. */
function routeSelector(r: RouteArgs): string[] {
  const table = r.table === "main" || r.table === "" ? "main" : r.table;
  return [
    r.family === "inet6" ? "-6" : "-4",
    "route",
    "__VERB__",
    ...(r.type && r.type !== "unicast" ? [r.type] : []),
    r.dst === "" ? "default" : r.dst,
    ...(r.gateway ? ["via", r.gateway] : []),
    ...(r.outLinkName ? ["dev", r.outLinkName] : []),
    "table", table,
    "metric", String(r.priority),
  ];
}

const withVerb = (args: string[], verb: string) => args.map((a) => (a === "__VERB__" ? verb : a));

export async function replaceRoute(t: NetTarget, r: RouteArgs): Promise<void> {
  const args = withVerb(routeSelector(r), "replace");
  if (r.src) args.push("src", r.src);
  if (r.scope) args.push("scope", r.scope);
  if (r.protocol) args.push("proto", r.protocol);
  if (r.mtu) args.push("mtu", String(r.mtu));
  await ip(t, args);
}

export async function removeRoute(t: NetTarget, r: RouteArgs): Promise<void> {
  await ipIdempotent(t, withVerb(routeSelector(r), "del"), /No such process|Cannot find device/);
}

/**
 * Sets the kernel host and domain name. Only for PID 1: a network namespace shares the UTS namespace
 * (and so the hostname) with the host, so a netns-managing machined must not call this.
 */
export async function setHostname(t: NetTarget, hostname: string, domainname: string, procRoot = "/proc"): Promise<void> {
  if (check(t).kind !== "pid1") throw new Error(`refusing to set the hostname for ${describeTarget(t)}: it is shared with the host`);
  await writeFile(path.join(procRoot, "sys/kernel/hostname"), hostname);
  await writeFile(path.join(procRoot, "sys/kernel/domainname"), domainname || "(none)");
}

/**
 * Writes files (name → content) into `root` (a folder machined owns: the OS image's /system/etc or a
 * local-mode state folder), each replaced atomically so readers never see half a resolv.conf.
 */
export async function writeEtcFiles(root: string, files: Record<string, string>, fs: Files = hostFiles): Promise<void> {
  if (!path.isAbsolute(root)) throw new Error(`etc root must be an absolute path, got ${JSON.stringify(root)}`);
  for (const name of Object.keys(files)) {
    if (name.includes("/") || name.startsWith(".")) throw new Error(`invalid etc file name ${JSON.stringify(name)}`);
  }
  await fs.mkdir(root, { recursive: true });
  for (const [name, content] of Object.entries(files)) await writeFileAtomic(fs, path.join(root, name), content, 0o644);
}

export interface DhcpLease {
  /** `10.250.0.100/24` */
  address: string;
  routers: string[];
  dnsServers: string[];
  domain: string;
  hostname: string;
  mtu?: number;
  leaseSeconds: number;
}

/** udhcpc calls this script with the lease in its environment; we only print it, one key per line. */
const DHCP_SCRIPT = `#!/bin/sh
[ "$1" = bound ] || [ "$1" = renew ] || exit 0
echo MACHINED_LEASE_BEGIN
for k in ip mask router dns domain hostname mtu lease; do
  eval "v=\\$$k"
  echo "MACHINED_LEASE $k=$v"
done
echo MACHINED_LEASE_END
`;

/** The udhcpc to use: a standalone one, else busybox's applet; undefined when neither exists. */
export async function findUdhcpc(): Promise<string[] | undefined> {
  for (const cand of [["udhcpc"], ["busybox", "udhcpc"]]) {
    const r = await execa(cand[0], [...cand.slice(1), "--help"], { reject: false, timeout: 5_000 }).catch(() => undefined);
    if (r && /udhcpc/i.test(`${r.stdout}${r.stderr}`)) return cand;
  }
  return undefined;
}

/** The last complete lease block udhcpc's script printed; undefined when there is none. */
export function parseLease(stdout: string): DhcpLease | undefined {
  const lines = stdout.split("\n");
  const end = lines.lastIndexOf("MACHINED_LEASE_END");
  const begin = lines.lastIndexOf("MACHINED_LEASE_BEGIN", end);
  if (end < 0 || begin < 0) return undefined;
  const kv: Record<string, string> = {};
  for (const l of lines.slice(begin + 1, end)) {
    const m = /^MACHINED_LEASE (\w+)=(.*)$/.exec(l);
    if (m) kv[m[1]] = m[2].trim();
  }
  if (!kv.ip) return undefined;
  const words = (s = "") => s.split(/\s+/).filter(Boolean);
  const bits = Number(kv.mask) || 32;
  return {
    address: `${kv.ip}/${bits}`,
    routers: words(kv.router),
    dnsServers: words(kv.dns),
    domain: kv.domain ?? "",
    hostname: kv.hostname ?? "",
    ...(Number(kv.mtu) > 0 ? { mtu: Number(kv.mtu) } : {}),
    leaseSeconds: Number(kv.lease) || 0,
  };
}

/**
 * Obtains one DHCPv4 lease on `link` (udhcpc in the target namespace, quitting once bound); the caller
 * applies it as address/route/resolver specs and asks again before it expires. Undefined = no offer.
 */
export async function acquireDhcpLease(
  t: NetTarget,
  link: string,
  opts: { udhcpc: string[]; timeoutSeconds?: number; signal?: AbortSignal },
): Promise<DhcpLease | undefined> {
  check(t);
  const dir = await mkdtemp(path.join(tmpdir(), "machined-dhcp-"));
  try {
    const script = path.join(dir, "lease.sh");
    await writeFile(script, DHCP_SCRIPT);
    await chmod(script, 0o755);
    const tries = String(Math.max(1, Math.ceil((opts.timeoutSeconds ?? 6) / 2)));
    // -f foreground, -q quit once bound, -n give up without a lease, -t/-T retries and their spacing.
    const dhcp = [...opts.udhcpc, "-i", link, "-f", "-q", "-n", "-t", tries, "-T", "2", "-s", script];
    // `ip netns exec` runs it inside the namespace; as PID 1 we are already in the right one.
    const [cmd, ...argv] = t.kind === "netns" ? ["ip", "netns", "exec", t.netns, ...dhcp] : dhcp;
    const r = await execa(cmd, argv, { reject: false, timeout: 60_000, cancelSignal: opts.signal });
    return parseLease(String(r.stdout));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
