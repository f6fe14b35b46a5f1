/**
 * network.OperatorSpecController (only when machined owns the network): DHCPv4 for interfaces with
 * `dhcp: true`. Each lease comes from busybox udhcpc run once inside the namespace (it exits when bound);
 * its address, default route and resolvers become AddressSpec/RouteSpec/ResolverSpec in the
 * `network-config` namespace at the `operator` layer, which the merge controllers fold in. A lease is
 * renewed by asking again at half its lifetime. Without udhcpc, DHCP is skipped with a log line.
 * DHCPv6 is not implemented.
 */
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import type { Controller, ReconcileContext } from "../../state/runtime/index.js";
import { acquireDhcpLease, findUdhcpc, type DhcpLease, type NetTarget } from "../../host/net/apply.js";
import {
  AddressSpecType,
  LinkStatusType,
  ResolverSpecType,
  RouteSpecType,
  type ResolverSpecSpec,
} from "../../machinery/resources/types/network.js";
import { readAll } from "../../machinery/resources/read.js";
import { addressSpec } from "./address-merge.js";
import { canonicalAddr } from "../../machinery/net/addr.js";
import { routeSpec } from "./route-merge.js";
import { networkSection, NETWORK_CONFIG_NS, NETWORK_NS, type NetworkEnv } from "./shared.js";

export type LeaseFn = (link: string) => Promise<DhcpLease | undefined>;

interface LeaseState {
  lease?: DhcpLease;
  /** When to ask the server again (ms since epoch). */
  due: number;
}

const FAIL_RETRY_MS = 10_000;

export function dhcp4Controller(env: NetworkEnv & { target: NetTarget }, leaseFn?: LeaseFn): Controller {
  const leases = new Map<string, LeaseState>();
  let udhcpc: string[] | undefined | null = null; // null = not looked for yet
  let warned = false;
  const acquire: LeaseFn =
    leaseFn ??
    (async (link) => {
      if (udhcpc === null) udhcpc = await findUdhcpc();
      if (!udhcpc) return undefined;
      return acquireDhcpLease(env.target, link, { udhcpc });
    });

  return {
    name: "network.OperatorSpecController",
    inputs: [machineConfigInput, { namespace: NETWORK_NS, type: LinkStatusType.type, kind: "weak" }],
    outputs: [
      { type: AddressSpecType.type, kind: "shared" },
      { type: RouteSpecType.type, kind: "shared" },
      { type: ResolverSpecType.type, kind: "shared" },
    ],
    async reconcile(ctx) {
      const net = networkSection(machineConfig(ctx));
      const links = new Map(readAll(ctx, LinkStatusType).map((r) => [r.metadata.id, r.spec]));
      const dhcpLinks = (net.interfaces ?? []).filter((d) => d.dhcp && !d.ignore && d.interface);
      for (const name of leases.keys()) if (!dhcpLinks.some((d) => d.interface === name)) leases.delete(name);

      let next = Infinity;
      for (const dev of dhcpLinks) {
        const name = dev.interface!;
        const link = links.get(name);
        // Ask only once the link is up (LinkSpecController brings it up); LinkStatus wakes us then.
        if (!link?.flags.split(",").includes("UP")) continue;
        let st = leases.get(name);
        if (!st || Date.now() >= st.due) {
          const lease = await acquire(name).catch((err: unknown) => {
            ctx.log("dhcp failed", { link: name, error: String(err) });
            return undefined;
          });
          if (udhcpc === undefined && !leaseFn && !warned) {
            warned = true;
            ctx.log("udhcpc not found (neither standalone nor in busybox); DHCP is not available", { link: name });
          }
          st = lease
            ? { lease, due: Date.now() + Math.max(5, lease.leaseSeconds / 2) * 1000 }
            : { lease: st?.lease, due: Date.now() + FAIL_RETRY_MS };
          leases.set(name, st);
          if (lease) ctx.log("dhcp lease", { link: name, address: lease.address, lease: lease.leaseSeconds });
        }
        next = Math.min(next, st.due - Date.now());
      }
      publish(ctx, leases, dhcpLinks.find((d) => d.dhcpOptions?.routeMetric)?.dhcpOptions?.routeMetric);
      return Number.isFinite(next) ? { requeueAfterMs: Math.max(1000, next) } : undefined;
    },
  };
}

/** Lease → operator-layer specs, ids prefixed by `dhcp4/<link>/`. */
function publish(ctx: ReconcileContext, leases: Map<string, LeaseState>, routeMetric?: number): void {
  const keep = { address: [] as string[], route: [] as string[], resolver: [] as string[] };
  for (const [link, { lease }] of leases) {
    if (!lease) continue;
    const a = addressSpec(link, lease.address, "operator");
    if (a) {
      const id = `dhcp4/${a.id}`;
      ctx.apply({ namespace: NETWORK_CONFIG_NS, type: AddressSpecType.type, id, spec: a.spec });
      keep.address.push(id);
    }
    const router = lease.routers[0];
    const r = router ? routeSpec(link, { gateway: router, metric: routeMetric }, "operator", "dhcp") : undefined;
    if (r) {
      const id = `dhcp4/${link}/${r.id}`;
      ctx.apply({ namespace: NETWORK_CONFIG_NS, type: RouteSpecType.type, id, spec: r.spec });
      keep.route.push(id);
    }
    if (lease.dnsServers.length) {
      const servers = lease.dnsServers.map(canonicalAddr);
      const spec: ResolverSpecSpec = {
        dnsServers: servers,
        nameServers: servers.map((addr) => ({ addr, protocol: "Do53", tlsServerName: "" })),
        layer: "operator",
        ...(lease.domain ? { searchDomains: [lease.domain] } : {}),
      };
      const id = `dhcp4/${link}`;
      ctx.apply({ namespace: NETWORK_CONFIG_NS, type: ResolverSpecType.type, id, spec });
      keep.resolver.push(id);
    }
  }
  ctx.cleanup(NETWORK_CONFIG_NS, AddressSpecType.type, keep.address);
  ctx.cleanup(NETWORK_CONFIG_NS, RouteSpecType.type, keep.route);
  ctx.cleanup(NETWORK_CONFIG_NS, ResolverSpecType.type, keep.resolver);
}
