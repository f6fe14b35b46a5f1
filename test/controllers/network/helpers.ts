/** Shared fixtures for the network controller tests: a store, a runtime, a config and fake kernel observations. */
import { loadConfig } from "../../../src/machinery/config/index.js";
import { newResource, type Resource } from "../../../src/machinery/resources/resource.js";
import type * as T from "../../../src/machinery/resources/types/network.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { ControllerRuntime, type Controller } from "../../../src/state/runtime/index.js";
import type { ObservedKind, Observers } from "../../../src/controllers/network/index.js";

export { eventually, sleep } from "../../state/helpers.js";

export const CONFIG_PTR = { namespace: "config", type: "MachineConfigs.config.talos.dev", id: "v1alpha1" };

export function setConfig(s: InMemoryState, yaml: string): void {
  const cfg = loadConfig(yaml);
  if (s.get(CONFIG_PTR)) s.update(newResource(CONFIG_PTR, cfg), "");
  else s.create(newResource(CONFIG_PTR, cfg), "");
}

export function spec<S>(s: InMemoryState, type: string, id: string, namespace = "network"): S | undefined {
  return s.get({ namespace, type, id })?.spec as S | undefined;
}

export function ids(s: InMemoryState, type: string, namespace = "network"): string[] {
  return s.list(namespace, type).map((r: Resource) => r.metadata.id);
}

export function start(s: InMemoryState, controllers: Controller[]): ControllerRuntime {
  const rt = new ControllerRuntime(s, { backoff: { initialMs: 10, maxMs: 200 } });
  for (const c of controllers) rt.register(c);
  rt.start();
  return rt;
}

export function link(index: number, name: string, extra: Partial<T.LinkStatusSpec> = {}): { id: string; spec: T.LinkStatusSpec } {
  return {
    id: name,
    spec: {
      index, type: "ether", linkIndex: 0, flags: "UP,BROADCAST,RUNNING,MULTICAST,LOWER_UP", hardwareAddr: "aa:bb:cc:00:00:0" + index,
      permanentAddr: "", broadcastAddr: "ff:ff:ff:ff:ff:ff", mtu: 1500, queueDisc: "noqueue", operationalState: "up", kind: "",
      slaveKind: "", linkState: true, port: "Other", duplex: "Unknown", ...extra,
    },
  };
}

export function addr(linkIndex: number, linkName: string, address: string, scope = "global"): { id: string; spec: T.AddressStatusSpec } {
  return {
    id: `${linkName}/${address}`,
    spec: { address, linkIndex, linkName, family: address.includes(":") ? "inet6" : "inet4", scope, flags: "permanent", priority: 0 },
  };
}

export function route(dst: string, gateway: string, link: string, priority = 1024): { id: string; spec: T.RouteStatusSpec } {
  const spec: T.RouteStatusSpec = {
    family: "inet4", dst, src: "", gateway, outLinkName: link, table: "main", priority, scope: gateway ? "global" : "link",
    type: "unicast", flags: "", protocol: "static",
  };
  return { id: `inet4/${gateway}/${dst}/${priority}`, spec };
}

/**
 * Mutable kernel fixture. The observers read it when woken; `changed(...)` plays the kernel's change
 * notification (no argument: every kind), so a test that forgets to announce a change sees nothing
 * happen, as with the real kernel observers.
 */
export function fakeKernel() {
  const k = {
    links: [link(1, "lo", { type: "loopback", flags: "UP,LOOPBACK,RUNNING,LOWER_UP", operationalState: "unknown" }), link(2, "eth0")],
    addresses: [addr(1, "lo", "127.0.0.1/8", "host"), addr(2, "eth0", "10.5.0.2/24")],
    routes: [route("", "10.5.0.1", "eth0")],
    resolvers: { dnsServers: ["10.5.0.1"], searchDomains: ["lan"] } as T.ResolverStatusSpec,
    hostname: { hostname: "devbox", domainname: "" } as T.HostnameStatusSpec,
  };
  const observe: Observers = {
    links: async () => structuredClone(k.links),
    addresses: async () => structuredClone(k.addresses),
    routes: async () => structuredClone(k.routes),
    resolvers: async () => ({ id: "resolvers", spec: structuredClone(k.resolvers) }),
    hostname: async () => ({ id: "hostname", spec: structuredClone(k.hostname) }),
    watch(kind, onChange) {
      let set = listeners.get(kind);
      if (!set) listeners.set(kind, (set = new Set()));
      set.add(onChange);
      return () => set.delete(onChange);
    },
  };
  const listeners = new Map<ObservedKind, Set<() => void>>();
  const changed = (...kinds: ObservedKind[]) => {
    const all: ObservedKind[] = ["links", "addresses", "routes", "resolvers", "hostname"];
    for (const kind of kinds.length ? kinds : all) for (const cb of listeners.get(kind) ?? []) cb();
  };
  /** How many subscriptions are open (they must all close when the runtime stops). */
  const watching = () => [...listeners.values()].reduce((n, set) => n + set.size, 0);
  return { k, observe, changed, watching };
}

export const CONFIG = `version: v1alpha1
machine:
  type: worker
  network:
    hostname: node-1.example.org
    nameservers: [9.9.9.9, "2620:fe::fe"]
    interfaces:
      - interface: eth0
        addresses: [10.5.0.2/24, "fd00::0002/64"]
        mtu: 1400
        routes:
          - network: 0.0.0.0/0
            gateway: 10.5.0.1
          - network: 192.168.10.0/24
            metric: 100
        vlans:
          - vlanId: 42
            addresses: [10.42.0.2/24]
      - interface: eth9
        ignore: true
        addresses: [10.9.0.2/24]
    extraHostEntries:
      - ip: 10.5.0.50
        aliases: [registry.local]
  time:
    servers: [pool.ntp.org]
cluster:
  network:
    podSubnets: [10.244.0.0/16]
    serviceSubnets: [10.96.0.0/12]
`;

/** Like eventually, for asynchronous conditions (files, commands). */
export async function eventuallyAsync(cond: () => Promise<boolean>, timeoutMs = 5000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
