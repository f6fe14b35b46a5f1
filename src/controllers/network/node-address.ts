/**
 * network.NodeAddressController: the node's addresses as other subsystems see them (NodeAddress):
 * `current` (global/site addresses on links that are up), `routed` (the same, for routing), `default`
 * (the first address, sticky while it stays), `accumulative` (every address ever seen, never shrinks),
 * and the `-no-k8s` / `-only-k8s` variants filtered by the pod and service subnets.
 * SideroLink and "external" platform addresses do not exist here, so `routed` equals `current`.
 */
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import type { Controller, ReconcileContext } from "../../state/runtime/index.js";
import { AddressStatusType, LinkStatusType, NodeAddressType, type AddressStatusSpec, type NodeAddressSpec } from "../../machinery/resources/types/network.js";
import { readAll, readSpec } from "../../machinery/resources/read.js";
import type { MachineConfig } from "../../machinery/config/index.js";
import {
  comparePrefixV1,
  comparePrefixV2,
  contains,
  formatPrefix,
  isLinkLocalUnicast,
  isLoopback,
  isMulticast,
  parsePrefix,
  type Prefix,
} from "../../machinery/net/addr.js";
import { NETWORK_NS } from "./shared.js";

const SCOPE_OK = new Set(["global", "site"]);
/** Talos's defaults when the config names no pod/service subnets. */
const DEFAULT_POD_SUBNETS = ["10.244.0.0/16"];
const DEFAULT_SERVICE_SUBNETS = ["10.96.0.0/12"];

interface Filter {
  include: Prefix[];
  exclude: Prefix[];
}

function k8sFilters(cfg: MachineConfig | undefined): Map<string, Filter> {
  const filters = new Map<string, Filter>();
  if (!cfg?.cluster) return filters; // upstream publishes the filters only once a config exists
  const net = cfg.cluster.network;
  const parse = (list: readonly string[]) => list.map(parsePrefix).filter((p): p is Prefix => p !== undefined);
  const k8s = [...parse(net?.podSubnets ?? DEFAULT_POD_SUBNETS), ...parse(net?.serviceSubnets ?? DEFAULT_SERVICE_SUBNETS)];
  filters.set("no-k8s", { include: [], exclude: k8s });
  filters.set("only-k8s", k8s.length ? { include: k8s, exclude: [] } : { include: [], exclude: parse(["0.0.0.0/0", "::/0"]) });
  return filters;
}

function applyFilter(list: Prefix[], f: Filter): Prefix[] {
  return list.filter(
    (p) => (f.include.length === 0 || f.include.some((s) => contains(s, p.ip))) && !f.exclude.some((s) => contains(s, p.ip)),
  );
}

function dedupe(sorted: Prefix[], compare: (a: Prefix, b: Prefix) => number): Prefix[] {
  return sorted.filter((p, i) => i === 0 || compare(sorted[i - 1], p) !== 0);
}

export function nodeAddressController(): Controller {
  return {
    name: "network.NodeAddressController",
    inputs: [
      { namespace: NETWORK_NS, type: AddressStatusType.type, kind: "weak" },
      { namespace: NETWORK_NS, type: LinkStatusType.type, kind: "weak" },
      machineConfigInput,
    ],
    outputs: [{ type: NodeAddressType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      const algo: NodeAddressSpec["sortAlgorithm"] = cfg?.machine?.features?.nodeAddressSortAlgorithm === "v2" ? "v2" : "v1";
      const compare = algo === "v2" ? comparePrefixV2 : comparePrefixV1;

      // A link counts as up when operationally up (or unknown, e.g. lo); physical ones also need carrier.
      const linksUp = new Set<number>();
      for (const r of readAll(ctx, LinkStatusType)) {
        const l = r.spec;
        const physical = l.type === "ether" && l.kind === "";
        if ((l.operationalState === "up" || l.operationalState === "unknown") && (!physical || l.linkState)) linksUp.add(l.index);
      }

      const addrs = readAll(ctx, AddressStatusType)
        .map((r) => r.spec)
        .map((a) => ({ a, p: parsePrefix(a.address) }))
        .filter((x): x is { a: AddressStatusSpec; p: Prefix } => x.p !== undefined)
        .filter(({ a, p }) => SCOPE_OK.has(a.scope) && !isLoopback(p.ip) && !isMulticast(p.ip) && !isLinkLocalUnicast(p.ip))
        .sort((x, y) => (x.a.linkName < y.a.linkName ? -1 : x.a.linkName > y.a.linkName ? 1 : compare(x.p, y.p)));

      const accumulative = addrs.map((x) => x.p);
      const current = dedupe(addrs.filter((x) => linksUp.has(x.a.linkIndex)).map((x) => x.p).sort(compare), compare);
      const routed = current;
      const touched: string[] = [];
      const write = (id: string, list: Prefix[]) => {
        ctx.apply({ namespace: NETWORK_NS, type: NodeAddressType.type, id, spec: { addresses: list.map(formatPrefix), sortAlgorithm: algo } });
        touched.push(id);
      };

      // default: the smallest address of the alphabetically first link, kept while it is still current.
      if (addrs.length > 0) {
        const prev = readSpec(ctx, NodeAddressType, "default");
        const keep = prev && prev.sortAlgorithm === algo && prev.addresses.length > 0 && current.some((p) => formatPrefix(p) === prev.addresses[0]);
        if (keep) touched.push("default");
        else write("default", [addrs[0].p]);
      }
      write("current", current);
      write("routed", routed);
      writeAccumulative(ctx, "accumulative", accumulative, algo, compare, touched);

      for (const [name, f] of k8sFilters(cfg)) {
        write(`current-${name}`, applyFilter(current, f));
        write(`routed-${name}`, applyFilter(routed, f));
        writeAccumulative(ctx, `accumulative-${name}`, applyFilter(accumulative, f), algo, compare, touched);
      }
      ctx.cleanup(NETWORK_NS, NodeAddressType.type, touched);
    },
  };
}

/** Accumulative lists only grow: new addresses are inserted in sort order into what was there. */
function writeAccumulative(
  ctx: ReconcileContext,
  id: string,
  add: Prefix[],
  algo: NodeAddressSpec["sortAlgorithm"],
  compare: (a: Prefix, b: Prefix) => number,
  touched: string[],
): void {
  const prev = readSpec(ctx, NodeAddressType, id);
  const list = (prev?.addresses ?? []).map(parsePrefix).filter((p): p is Prefix => p !== undefined);
  for (const p of add) if (!list.some((q) => compare(q, p) === 0)) list.push(p);
  list.sort(compare);
  ctx.apply({ namespace: NETWORK_NS, type: NodeAddressType.type, id, spec: { addresses: list.map(formatPrefix), sortAlgorithm: algo } });
  touched.push(id);
}
