/** Observed links (an RTM_GETLINK dump) → LinkStatus specs, keyed by link name like upstream. */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { bridgeInfo, hexBytes, vlanInfo, vrfTable, type NlLink } from "./netlink.js";
import { DUPLEX, LINK_FLAGS, linkFlagsText, linkTypeName, operStateName, routingTableName } from "./names.js";
import { withDumps } from "./rtnl.js";
import type { LinkStatusSpec, Observed } from "./types.js";

export interface NetnsOptions {
  /** Named network namespace (as in `ip netns list`) to observe instead of our own. */
  netns?: string;
}

const LOWER_UP = 1 << LINK_FLAGS.indexOf("LOWER_UP");

const VLAN_PROTOCOLS: Record<number, string> = { 0x8100: "802.1q", 0x88a8: "802.1ad" };

/** Upstream's rule: the peer is the veth whose index we link to and which links back to us. */
function vethPeer(l: NlLink, byIndex: Map<number, NlLink>): string {
  // A peer in another namespace has an index that means nothing here.
  if (l.linkOtherNetns) return "";
  const cand = byIndex.get(l.link);
  if (!cand || cand.kind !== "veth" || cand.linkOtherNetns) return "";
  return cand.link === l.index ? cand.name : "";
}

/** Reorders a spec's keys into upstream's field order so YAML renders like Talos's. */
function ordered(spec: LinkStatusSpec): LinkStatusSpec {
  const order: Array<keyof LinkStatusSpec> = [
    "alias", "altNames", "index", "type", "linkIndex", "flags", "hardwareAddr", "permanentAddr", "broadcastAddr",
    "mtu", "queueDisc", "masterIndex", "operationalState", "kind", "slaveKind", "busPath", "pciID", "driver",
    "driverVersion", "firmwareVersion", "productID", "vendorID", "product", "vendor", "linkState", "speedMbit",
    "port", "duplex", "vlan", "bridgeMaster", "vrfMaster", "veth",
  ];
  return Object.fromEntries(order.filter((k) => spec[k] !== undefined).map((k) => [k, spec[k]])) as unknown as LinkStatusSpec;
}

/** The permanent address is reported (as iproute2 did) only when it differs from the current one. */
function permanentAddr(l: NlLink): string {
  if (!l.permAddress) return "";
  if (l.address && l.address.equals(l.permAddress)) return "";
  return hexBytes(l.permAddress);
}

export function linkSpecs(links: NlLink[]): Array<Observed<LinkStatusSpec>> {
  const byIndex = new Map(links.map((l) => [l.index, l]));
  return links.map((l) => {
    const kind = l.kind ?? "";
    const spec: LinkStatusSpec = {
      ...(l.alias ? { alias: l.alias } : {}),
      ...(l.altNames.length ? { altNames: [...l.altNames] } : {}),
      index: l.index,
      type: linkTypeName(l.type),
      linkIndex: l.link,
      flags: linkFlagsText(l.flags),
      hardwareAddr: hexBytes(l.address),
      permanentAddr: permanentAddr(l),
      broadcastAddr: hexBytes(l.broadcast),
      mtu: l.mtu ?? 0,
      queueDisc: l.qdisc ?? "",
      ...(l.master ? { masterIndex: l.master } : {}),
      operationalState: operStateName(l.operState),
      kind,
      slaveKind: l.slaveKind ?? "",
      // The parent device name is what ethtool reports as bus info (PCI slot, virtioN, …).
      ...(l.parentDev ? { busPath: l.parentDev } : {}),
      // Without ethtool, carrier-with-running (LOWER_UP) is the closest observable to its link state.
      linkState: (l.flags & LOWER_UP) !== 0,
      port: "Other",
      duplex: "Unknown",
    };
    if (kind === "vlan") {
      const v = vlanInfo(l.infoData);
      spec.vlan = { vlanID: v.id, vlanProtocol: VLAN_PROTOCOLS[v.protocol] ?? `0x${v.protocol.toString(16).padStart(4, "0")}` };
    }
    if (kind === "bridge") {
      // Upstream omits each part (and the whole object) while it is all-false.
      const b = bridgeInfo(l.infoData);
      const bm: NonNullable<LinkStatusSpec["bridgeMaster"]> = {
        ...(b.stp !== 0 ? { stp: { enabled: true } } : {}),
        ...(b.vlanFiltering !== 0 ? { vlan: { filteringEnabled: true } } : {}),
      };
      if (Object.keys(bm).length) spec.bridgeMaster = bm;
    }
    const table = kind === "vrf" ? vrfTable(l.infoData) : undefined;
    if (table !== undefined) spec.vrfMaster = { table: routingTableName(table) };
    if (kind === "veth") {
      const peerName = vethPeer(l, byIndex);
      if (peerName) spec.veth = { peerName };
    }
    return { id: l.name, spec: ordered(spec) };
  });
}

export interface ObserveLinksOptions extends NetnsOptions {
  /** Root for /sys when observing our own namespace (device driver, speed, duplex); defaults to "/". */
  root?: string;
}

async function readSys(file: string): Promise<string | undefined> {
  try {
    return (await readFile(file, "utf8")).trim();
  } catch {
    return undefined;
  }
}

/** Adds what sysfs knows about a device in our own namespace (upstream gets these from sysfs and ethtool). */
export async function enrichFromSysfs(spec: LinkStatusSpec, name: string, root = "/"): Promise<void> {
  const dir = path.join(root, "sys/class/net", name);
  const uevent = await readSys(path.join(dir, "device/uevent"));
  for (const line of uevent?.split("\n") ?? []) {
    const [k, v] = [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)];
    if (k === "DRIVER" && v) spec.driver = v;
    if (k === "PCI_ID" && v) spec.pciID = v;
    if (k === "PCI_SLOT_NAME" && v) spec.busPath = v;
  }
  const speed = Number(await readSys(path.join(dir, "speed")));
  if (Number.isInteger(speed) && speed > 0) spec.speedMbit = speed;
  const duplex = await readSys(path.join(dir, "duplex"));
  if (duplex && DUPLEX[duplex]) spec.duplex = DUPLEX[duplex];
}

export async function observeLinks(opts?: ObserveLinksOptions): Promise<Array<Observed<LinkStatusSpec>>> {
  const links = linkSpecs(withDumps(opts?.netns, (d) => d.links()));
  // sysfs shows our own namespace's devices only, so skip it when looking into another one.
  if (!opts?.netns) await Promise.all(links.map((l) => enrichFromSysfs(l.spec, l.id, opts?.root)));
  return links.map((l) => ({ id: l.id, spec: ordered(l.spec) }));
}
