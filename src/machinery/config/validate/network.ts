/**
 * Checks of `machine.network` (upstream CheckDeviceInterface, CheckDeviceAddressing, CheckDeviceRoutes, bond,
 * wireguard, VLAN and KubeSpan rules), reported with the YAML path of the offending entry.
 */
import { checkIPOrCIDR, hasPort, isSubnetOrAddress, parseCIDR, parseIP } from "../net.js";
import { joinPath } from "../path.js";
import type { NetworkDevice, NetworkSection } from "../schema.js";
import type { Report } from "./report.js";

const bondEnums: Record<string, readonly string[]> = {
  mode: ["balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"],
  xmitHashPolicy: ["layer2", "layer3+4", "layer2+3", "encap2+3", "encap3+4"],
  lacpRate: ["slow", "fast"],
  arpValidate: ["none", "active", "backup", "all", "filter", "filter-active", "filter-backup"],
  arpAllTargets: ["any", "all"],
  primaryReselect: ["always", "better", "failure"],
  failOverMac: ["none", "active", "follow"],
  adSelect: ["stable", "bandwidth", "count"],
};

const KUBESPAN_MIN_MTU = 1280;

export function checkNetwork(net: NetworkSection, isWorker: boolean, r: Report): void {
  const base = "machine.network";
  const devices = net.interfaces ?? [];
  // Links enslaved to a bond or bridge, with the link that owns them.
  const secondary = new Map<string, string>();

  devices.forEach((d, i) => {
    const p = `${base}.interfaces[${i}]`;
    const name = d.interface ?? "";
    if (d.bond && d.bridge) r.error(p, `interface ${JSON.stringify(name)} has both bridge and bond sections set`);
    if (d.bond && (d.bond.interfaces?.length ?? 0) > 0 && (d.bond.deviceSelectors?.length ?? 0) > 0) {
      r.error(`${p}.bond`, `interface ${JSON.stringify(name)} has both interfaces and deviceSelectors set`);
    }
    const members = d.bond?.interfaces ?? d.bridge?.interfaces ?? [];
    for (const m of members) {
      const owner = secondary.get(m);
      if (owner !== undefined && owner !== name) {
        r.error(p, `interface ${JSON.stringify(m)} is declared as part of two separate links: ${JSON.stringify(owner)} and ${JSON.stringify(name)}`);
      }
      secondary.set(m, name);
    }
  });

  devices.forEach((d, i) => {
    const p = `${base}.interfaces[${i}]`;
    if (d.ignore) return;
    checkDevice(d, p, secondary, r);
    if (isWorker) {
      if (d.vip) r.error(`${p}.vip`, "virtual (shared) IP is not allowed on non-controlplane nodes");
      d.vlans?.forEach((v, j) => {
        if (v.vip) r.error(`${p}.vlans[${j}].vip`, "virtual (shared) IP is not allowed on non-controlplane nodes");
      });
    }
  });

  const ks = net.kubespan;
  if (ks?.enabled) {
    if (ks.mtu !== undefined && ks.mtu < KUBESPAN_MIN_MTU) {
      r.error(`${base}.kubespan.mtu`, `kubespan link MTU must be at least ${KUBESPAN_MIN_MTU}, got ${ks.mtu}`);
    }
    ks.filters?.endpoints?.forEach((e, i) => {
      if (!isSubnetOrAddress(e.replace(/^!/, ""))) {
        r.error(`${base}.kubespan.filters.endpoints[${i}]`, `KubeSpan endpoint filter is not valid: ${JSON.stringify(e)}`);
      }
    });
    ks.filters?.excludeAdvertisedNetworks?.forEach((e, i) => {
      if (!parseCIDR(e)) {
        r.error(`${base}.kubespan.filters.excludeAdvertisedNetworks[${i}]`, `invalid CIDR ${JSON.stringify(e)}`);
      }
    });
  }
}

function checkDevice(d: NetworkDevice, p: string, secondary: Map<string, string>, r: Report): void {
  if (!d.interface && !d.deviceSelector) r.error(p, "either interface or deviceSelector should be set");
  else if (d.interface && d.deviceSelector) r.error(p, "interface and deviceSelector are mutually exclusive");
  if (d.deviceSelector && Object.keys(d.deviceSelector).length === 0) {
    r.error(`${p}.deviceSelector`, "config section should contain at least one field");
  }
  if (d.bond) checkBond(d.bond, `${p}.bond`, r);
  if (d.wireguard) checkWireguard(d.wireguard, `${p}.wireguard`, r);

  if (d.interface && secondary.has(d.interface) && (d.dhcp || d.cidr || (d.addresses?.length ?? 0) > 0 || d.vip)) {
    r.error(p, `bonded/bridged interface ${JSON.stringify(d.interface)} shouldn't have any addressing methods configured`);
  }
  if ((d.addresses?.length ?? 0) > 0 && d.cidr) r.error(p, "interface can't have both .cidr and .addresses set");
  if (d.cidr) {
    const bad = checkIPOrCIDR(d.cidr);
    if (bad) r.error(`${p}.cidr`, bad);
    r.warn(`${p}.cidr`, "machine.network.interface.cidr is deprecated, please use machine.network.interface.addresses");
  }
  d.addresses?.forEach((a, j) => {
    const bad = checkIPOrCIDR(a);
    if (bad) r.error(`${p}.addresses[${j}]`, bad);
  });
  if (d.vip && !parseIP(d.vip.ip ?? "")) r.error(`${p}.vip.ip`, `invalid IP address ${JSON.stringify(d.vip.ip ?? "")}`);

  d.routes?.forEach((rt, j) => checkRoute(rt, `${p}.routes[${j}]`, r));

  d.vlans?.forEach((v, j) => {
    const vp = `${p}.vlans[${j}]`;
    if ((v.addresses?.length ?? 0) > 0 && v.cidr) r.error(vp, "vlan can't have both .cidr and .addresses set");
    if (v.cidr) {
      const bad = checkIPOrCIDR(v.cidr);
      if (bad) r.error(`${vp}.cidr`, bad);
    }
    v.addresses?.forEach((a, k) => {
      const bad = checkIPOrCIDR(a);
      if (bad) r.error(`${vp}.addresses[${k}]`, bad);
    });
    if (v.vlanId !== undefined && v.vlanId > 4094) r.error(`${vp}.vlanId`, `VLAN ID must be at most 4094, got ${v.vlanId}`);
    v.routes?.forEach((rt, k) => checkRoute(rt, `${vp}.routes[${k}]`, r));
  });
}

function checkRoute(rt: NonNullable<NetworkDevice["routes"]>[number], p: string, r: Report): void {
  if (rt.network && !parseCIDR(rt.network)) r.error(`${p}.network`, `invalid CIDR ${JSON.stringify(rt.network)}`);
  if (rt.gateway && !parseIP(rt.gateway)) r.error(`${p}.gateway`, `invalid IP address ${JSON.stringify(rt.gateway)}`);
  if (!rt.gateway && !rt.network) r.error(p, "either network or gateway should be set");
  if (rt.source && !parseIP(rt.source)) r.error(`${p}.source`, `invalid IP address ${JSON.stringify(rt.source)}`);
}

function checkBond(b: NonNullable<NetworkDevice["bond"]>, p: string, r: Report): void {
  for (const [field, allowed] of Object.entries(bondEnums)) {
    const v = (b as Record<string, unknown>)[field];
    if (typeof v === "string" && v !== "" && !allowed.includes(v)) {
      r.error(joinPath(p, field), `invalid value ${JSON.stringify(v)} (expected one of ${allowed.join(", ")})`);
    }
  }
  const mode = b.mode || "balance-rr";
  const miimon = b.miimon ?? 0;
  if (miimon === 0) {
    if (b.updelay) r.error(`${p}.updelay`, "bond.upDelay can't be set if miiMon is zero");
    if (b.downdelay) r.error(`${p}.downdelay`, "bond.downDelay can't be set if miiMon is zero");
  } else {
    if ((b.updelay ?? 0) % miimon !== 0) r.error(`${p}.updelay`, "bond.upDelay should be a multiple of miiMon");
    if ((b.downdelay ?? 0) % miimon !== 0) r.error(`${p}.downdelay`, "bond.downDelay should be a multiple of miiMon");
  }
  if ((b.arpIPTarget?.length ?? 0) > 0) r.error(`${p}.arpIPTarget`, "bond.arpIPTarget is not supported");
  if (b.lacpRate && mode !== "802.3ad") r.error(`${p}.lacpRate`, "bond.lacpRate is only available in 802.3ad mode");
  if (b.adActorSystem) r.error(`${p}.adActorSystem`, "bond.adActorSystem is not supported");
}

function checkWireguard(w: NonNullable<NetworkDevice["wireguard"]>, p: string, r: Report): void {
  const keyProblem = (k: string | undefined) => {
    const s = k ?? "";
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) return `invalid base64 key ${JSON.stringify(s)}`;
    const len = (s.length / 4) * 3 - (s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0);
    return len === 32 ? undefined : `wrong key ${JSON.stringify(s)} length: ${len}`;
  };
  const pk = keyProblem(w.privateKey);
  if (pk) r.error(`${p}.privateKey`, `private key is invalid: ${pk}`);
  w.peers?.forEach((peer, i) => {
    const pp = `${p}.peers[${i}]`;
    const bad = keyProblem(peer.publicKey);
    if (bad) r.error(`${pp}.publicKey`, `public key invalid: ${bad}`);
    if (peer.endpoint && !hasPort(peer.endpoint)) r.error(`${pp}.endpoint`, `peer endpoint ${JSON.stringify(peer.endpoint)} is invalid`);
    peer.allowedIPs?.forEach((a, j) => {
      if (!parseCIDR(a)) r.error(`${pp}.allowedIPs[${j}]`, `invalid CIDR ${JSON.stringify(a)}`);
    });
  });
}
