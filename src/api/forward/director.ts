/**
 * Where a call goes, decided from its metadata when its headers arrive, with apid's rules (its director):
 * - `proxyfrom` present (another node forwarded it), or no routing metadata: this node;
 * - `node` with more than one value: InvalidArgument "node metadata must be single-valued";
 * - `nodes`: one-to-many, every target answering with its own entry, allowed only for the services listed
 *   below (else InvalidArgument "one-2-many proxying is not supported for method X");
 * - `node`: one-to-one, the call passed through unchanged.
 * A node without a client certificate (a worker) cannot forward: a single target naming this node is
 * served here, anything else is PermissionDenied "no request forwarding".
 *
 * Two choices of ours where upstream dials itself: a one-to-one call whose target is this node is served
 * here (upstream's answer through itself is the same bytes), and the targets of a one-to-many call that name
 * this node are served in-process (see one2many.ts).
 */
import type * as grpc from "@grpc/grpc-js";

/** Methods that may be sent one-to-many with `nodes` metadata. */
const ONE_TO_MANY_PREFIXES = [
  "/machine.MachineService/",
  "/cluster.ClusterService/",
  "/inspect.InspectService/",
  "/storage.StorageService/",
  "/time.TimeService/",
];

/** apid's streamed methods (their replies are interleaved frames, not one merged message), plus any `...Stream`. */
const STREAMED = new Set([
  "/machine.MachineService/Copy",
  "/machine.MachineService/DiskUsage",
  "/machine.MachineService/Dmesg",
  "/machine.MachineService/EtcdSnapshot",
  "/machine.MachineService/Events",
  "/machine.MachineService/ImageList",
  "/machine.MachineService/Kubeconfig",
  "/machine.MachineService/List",
  "/machine.MachineService/DebugContainer",
  "/machine.MachineService/Logs",
  "/machine.MachineService/PacketCapture",
  "/machine.MachineService/Read",
  "/machine.LifecycleService/Install",
  "/machine.LifecycleService/Upgrade",
  "/os.OSService/Dmesg",
  "/cluster.ClusterService/HealthCheck",
]);

export function isStreamed(method: string): boolean {
  return STREAMED.has(method) || method.endsWith("Stream");
}

export type Route =
  /** Served by this node. echoHostname: a worker's `nodes` naming itself (metadata.hostname set by the handlers). */
  | { kind: "local"; echoHostname?: string }
  | { kind: "one2one"; target: string }
  | { kind: "one2many"; targets: string[]; streamed: boolean };

export interface Refusal {
  code: grpc.status;
  details: string;
}

export interface DirectorView {
  /** Names and addresses that refer to this node (exact match, as upstream). */
  isLocal(target: string): boolean;
  /** Whether this node holds a client certificate to forward with (control planes do, workers do not). */
  canForward(): boolean;
}

export const LOCAL: Route = { kind: "local" };

// grpc.status values, spelled out so this module needs grpc-js only for types.
const INVALID_ARGUMENT = 3;
const PERMISSION_DENIED = 7;
const INTERNAL = 13;

/**
 * Values of a metadata key. node:http2 joins repeated header fields into one ", "-separated value, where
 * grpc-go (upstream's server) keeps them apart; splitting gives upstream's list.
 */
function values(md: grpc.Metadata, key: string): string[] | undefined {
  const raw = md.get(key);
  if (raw.length === 0) return undefined;
  const out: string[] = [];
  for (const v of raw) for (const part of String(v).split(",")) out.push(part.trim());
  return out;
}

export function route(method: string, md: grpc.Metadata, view: DirectorView): Route | { refusal: Refusal } {
  if (md.get("proxyfrom").length) return LOCAL;
  let nodes = values(md, "nodes");
  let node = values(md, "node");
  if (!nodes && !node) return LOCAL;
  if (node && node.length !== 1) return { refusal: { code: INVALID_ARGUMENT, details: "node metadata must be single-valued" } };
  const forwarding = view.canForward();
  let echoHostname: string | undefined;
  if (!forwarding) {
    // Only a single destination that is this node itself is served without forwarding.
    if (node && view.isLocal(node[0])) node = undefined;
    if (nodes && nodes.length === 1 && view.isLocal(nodes[0])) {
      echoHostname = nodes[0];
      nodes = undefined;
    }
  }
  if (nodes) {
    if (!ONE_TO_MANY_PREFIXES.some((p) => method.startsWith(p))) {
      return { refusal: { code: INVALID_ARGUMENT, details: `one-2-many proxying is not supported for method ${method}` } };
    }
    if (!forwarding) return { refusal: { code: PERMISSION_DENIED, details: "no request forwarding" } };
    for (const t of nodes) {
      const bad = invalidTarget(t);
      if (bad) return { refusal: { code: INTERNAL, details: bad } };
    }
    return { kind: "one2many", targets: nodes, streamed: isStreamed(method) };
  }
  if (node) {
    if (!forwarding) return { refusal: { code: PERMISSION_DENIED, details: "no request forwarding" } };
    const bad = invalidTarget(node[0]);
    if (bad) return { refusal: { code: INTERNAL, details: bad } };
    return view.isLocal(node[0]) ? LOCAL : { kind: "one2one", target: node[0] };
  }
  return echoHostname === undefined ? LOCAL : { kind: "local", echoHostname };
}

/**
 * Whether a `node`/`nodes` target names this node: one of its own names or addresses (exact match, as upstream),
 * or, when the API listens on a wildcard address (`names` holds 0.0.0.0 or ::, as on a real node), any loopback
 * address: upstream dials such a target and reaches itself through its own loopback, so `-e 127.0.0.11 -n
 * 127.0.0.11` through a forwarded port works there. A node listening on 127.0.0.1 only (local mode) is not
 * reached at 127.0.99.99, so that target is dialed and refused, as upstream's would be.
 */
export function refersToThisNode(target: string, names: readonly string[]): boolean {
  const bare = target.replace(/^\[|\]$/g, "");
  if (names.includes(target) || names.includes(bare)) return true;
  return (names.includes("0.0.0.0") || names.includes("::")) && isLoopback(bare);
}

function isLoopback(addr: string): boolean {
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(addr)) return addr.split(".").every((o) => Number(o) <= 255);
  return addr === "::1" || /^::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/i.test(addr);
}

/** Upstream's backend refuses an empty target or one with a port (the port is always 50000). */
export function invalidTarget(target: string): string | undefined {
  if (target === "" || hasPort(target)) return `invalid target ${JSON.stringify(target)}`;
  return undefined;
}

function hasPort(t: string): boolean {
  if (t.startsWith("[")) return /\]:\d*$/.test(t);
  // One colon: host:port. More: a bare IPv6 address.
  const first = t.indexOf(":");
  return first !== -1 && first === t.lastIndexOf(":");
}

/** `host:port` for dialing a target (an IPv6 address in brackets). */
export function dialAddress(target: string, port: number): string {
  const host = target.startsWith("[") && target.endsWith("]") ? target : target.includes(":") ? `[${target}]` : target;
  return `${host}:${port}`;
}
