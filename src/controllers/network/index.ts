/**
 * The network controllers. Observation (statuses, NodeAddress, NetworkStatus, config-derived specs)
 * always runs; changing the network (links, addresses, routes, hostname, resolv.conf/hosts, DHCP) only
 * when machined owns it — `manage: true` with either a network namespace it was given or `pid1: true`
 * (checked against the real PID). In local mode (`manage: false`) nothing here changes the host.
 */
import path from "node:path";
import type { Controller } from "../../state/runtime/index.js";
import { netnsTarget, pid1Target, sandboxTarget, type NetTarget } from "../../host/net/apply.js";
import {
  observeAddresses,
  observeHostname,
  observeLinks,
  observeResolvers,
  observeRoutes,
  watchFiles,
  watchHostname,
  watchKernel,
} from "../../host/net/index.js";
import { addressMergeController } from "./address-merge.js";
import { addressSpecController } from "./address-spec.js";
import { addressStatusController } from "./address-status.js";
import { dhcp4Controller, type LeaseFn } from "./dhcp4.js";
import { etcFileController } from "./etc-files.js";
import { hostnameMergeController } from "./hostname-merge.js";
import { hostnameSpecController } from "./hostname-spec.js";
import { linkMergeController } from "./link-merge.js";
import { linkSpecController } from "./link-spec.js";
import { linkStatusController } from "./link-status.js";
import { nodeAddressController } from "./node-address.js";
import { resolverMergeController } from "./resolver-merge.js";
import { resolverSpecController } from "./resolver-spec.js";
import { routeMergeController } from "./route-merge.js";
import { routeSpecController } from "./route-spec.js";
import { routeStatusController } from "./route-status.js";
import type { NetworkEnv, Observers } from "./shared.js";
import { statusController } from "./status.js";
import { timeServerSpecController } from "./timeserver-spec.js";

export interface NetworkControllerOptions {
  /** Named network namespace (`ip netns list`) to observe, and to manage when `manage` is set. */
  netns?: string;
  /** Change the network to match the config. Requires `netns` or `pid1: true`. */
  manage: boolean;
  /** Manage the host's own network; only honoured when this process really is PID 1. */
  pid1?: boolean;
  /** Manage the network of the sandbox this process runs in (local mode with --sandbox). */
  sandbox?: boolean;
  /**
   * Folder for resolv.conf and hosts. When managing, they are written there (not written at all without
   * it); readiness (NetworkStatus.etcFilesReady) checks this folder, or /etc when not given.
   */
  etcRoot?: string;
  /** Root for reading the host's hostname/resolv.conf/sysfs in observe mode (tests); default "/". */
  hostRoot?: string;
  /** Retry interval while the kernel does not match yet, default 1000 ms. */
  retryMs?: number;
  /** Replace kernel observations and their change notifications (tests). */
  observe?: Partial<Observers>;
  /** Replace DHCP lease acquisition (tests). */
  dhcpLease?: LeaseFn;
}

/** Decides what we may change; throws for `manage: true` without an explicit target. */
export function networkTarget(opts: Pick<NetworkControllerOptions, "netns" | "manage" | "pid1" | "sandbox">): NetTarget | undefined {
  if (!opts.manage) return undefined;
  if (opts.netns) return netnsTarget(opts.netns);
  if (opts.pid1) return pid1Target();
  if (opts.sandbox) return sandboxTarget();
  throw new Error("network: manage requires a network namespace (netns) or pid1: true; refusing to change the host network");
}

/**
 * The kernel read over rtnetlink (no child process), woken by its link/address/route notifications;
 * resolv.conf and the hostname woken by inotify and the hostname sysctl's poll(2) notification.
 */
export function defaultObservers(opts: Pick<NetworkControllerOptions, "netns" | "hostRoot">): Observers {
  const netns = opts.netns;
  const root = opts.hostRoot;
  return {
    links: () => observeLinks({ netns, root }),
    addresses: () => observeAddresses({ netns }),
    routes: () => observeRoutes({ netns }),
    resolvers: () => observeResolvers({ root }),
    hostname: () => observeHostname({ root }),
    watch(kind, onChange) {
      if (kind === "resolvers") return watchFiles([path.join(root ?? "/", "etc/resolv.conf")], onChange);
      if (kind === "hostname") return watchHostname(onChange, { root });
      return watchKernel(netns, (kinds) => {
        if (kinds.has(kind)) onChange();
      });
    },
  };
}

export function networkControllers(opts: NetworkControllerOptions): Controller[] {
  const target = networkTarget(opts);
  const env: NetworkEnv = {
    observe: { ...defaultObservers(opts), ...opts.observe },
    target,
    etcRoot: opts.etcRoot ?? "/etc",
    watchFiles,
    retryMs: opts.retryMs ?? 1000,
  };
  const controllers: Controller[] = [
    linkStatusController(env),
    addressStatusController(env),
    routeStatusController(env),
    hostnameMergeController(env),
    hostnameSpecController(env),
    resolverMergeController(),
    resolverSpecController(env),
    timeServerSpecController(),
    addressMergeController(),
    routeMergeController(),
    linkMergeController(),
    nodeAddressController(),
    statusController(env),
  ];
  if (target) {
    const managed = { ...env, target };
    controllers.push(linkSpecController(managed), addressSpecController(managed), routeSpecController(managed), dhcp4Controller(managed, opts.dhcpLease));
    if (opts.etcRoot) controllers.push(etcFileController(opts.etcRoot));
  }
  return controllers;
}

export type { ObservedKind, Observers } from "./shared.js";
