/**
 * What the network controllers share: options, the kernel observers (injectable so tests can feed
 * fixtures), the typed network section of the machine config, and the resource pointers they use.
 */
import type { MachineConfig } from "../../machinery/config/index.js";
import type { ReconcileContext } from "../../state/runtime/index.js";
import type { NetTarget } from "../../host/net/apply.js";
import type {
  AddressStatusSpec,
  HostnameStatusSpec,
  LinkStatusSpec,
  ResolverStatusSpec,
  RouteStatusSpec,
} from "../../machinery/resources/types/network.js";
import { NETWORK_NS } from "../../machinery/resources/types/network.js";

export { NETWORK_NS };
/** Where layered specs (DHCP results) wait to be merged, as upstream's `network-config` namespace. */
export const NETWORK_CONFIG_NS = "network-config";

export interface Observed<S> {
  id: string;
  spec: S;
}

/** What the observers read; each kind can be watched for changes. */
export type ObservedKind = "links" | "addresses" | "routes" | "resolvers" | "hostname";

/** Reads of the kernel state, and the kernel's (or the file system's) word that one may have changed. */
export interface Observers {
  links(): Promise<Array<Observed<LinkStatusSpec>>>;
  addresses(): Promise<Array<Observed<AddressStatusSpec>>>;
  routes(): Promise<Array<Observed<RouteStatusSpec>>>;
  resolvers(): Promise<Observed<ResolverStatusSpec>>;
  hostname(): Promise<Observed<HostnameStatusSpec>>;
  /** Calls `onChange` whenever `kind` may have changed (no polling); returns the unsubscribe function. */
  watch(kind: ObservedKind, onChange: () => void): () => void;
}

/** What the controllers need at run time, resolved from NetworkControllerOptions by index.ts. */
export interface NetworkEnv {
  observe: Observers;
  /** Set only when machined owns the network; the apply controllers exist only then. */
  target?: NetTarget;
  /** Folder that receives resolv.conf and hosts (manage mode), or whose files are checked (observe mode). */
  etcRoot: string;
  /** Calls `onChange` when one of `files` may have changed; returns the unsubscribe function. */
  watchFiles(files: string[], onChange: () => void): () => void;
  /** How soon to look again while the kernel does not yet match the specs. */
  retryMs: number;
}

/** The typed `machine.network` section, or an empty one. */
export function networkSection(cfg: MachineConfig | undefined): NonNullable<NonNullable<MachineConfig["machine"]>["network"]> {
  return cfg?.machine?.network ?? {};
}

/** Mirrors observations into one output kind: apply every observed item, destroy the vanished ones. */
export function mirror<S>(ctx: ReconcileContext, type: string, items: Array<Observed<S>>): void {
  for (const o of items) ctx.apply({ namespace: NETWORK_NS, type, id: o.id, spec: o.spec });
  ctx.cleanup(NETWORK_NS, type, items.map((o) => o.id));
}
