/**
 * `machine.network` of the v1alpha1 document (upstream NetworkConfig, Device, Bond, Bridge, Vlan, Route ...).
 * Field names and nesting follow the yaml tags of the upstream Go types exactly.
 */
import * as z from "zod";
import { bool, duration, int, str, strList, uint } from "./primitives.js";

export const deviceSelector = z.strictObject({
  busPath: str.optional(),
  hardwareAddr: str.optional(),
  permanentAddr: str.optional(),
  pciID: str.optional(),
  driver: str.optional(),
  physical: bool.optional(),
});

export const route = z.strictObject({
  network: str.optional(),
  gateway: str.optional(),
  source: str.optional(),
  metric: uint.optional(),
  mtu: uint.optional(),
});

export const dhcpOptions = z.strictObject({
  routeMetric: uint.optional(),
  ipv4: bool.optional(),
  ipv6: bool.optional(),
  duidv6: str.optional(),
});

export const vip = z.strictObject({
  ip: str.optional(),
  equinixMetal: z.strictObject({ apiToken: str.optional() }).optional(),
  hcloud: z.strictObject({ apiToken: str.optional() }).optional(),
});

const bond = z.strictObject({
  interfaces: strList.optional(),
  deviceSelectors: z.array(deviceSelector).optional(),
  arpIPTarget: strList.optional(),
  mode: str.optional(),
  xmitHashPolicy: str.optional(),
  lacpRate: str.optional(),
  adActorSystem: str.optional(),
  arpValidate: str.optional(),
  arpAllTargets: str.optional(),
  primary: str.optional(),
  primaryReselect: str.optional(),
  failOverMac: str.optional(),
  adSelect: str.optional(),
  miimon: uint.optional(),
  updelay: uint.optional(),
  downdelay: uint.optional(),
  arpInterval: uint.optional(),
  resendIgmp: uint.optional(),
  minLinks: uint.optional(),
  lpInterval: uint.optional(),
  packetsPerSlave: uint.optional(),
  numPeerNotif: uint.optional(),
  tlbDynamicLb: uint.optional(),
  allSlavesActive: uint.optional(),
  useCarrier: bool.optional(),
  adActorSysPrio: uint.optional(),
  adUserPortKey: uint.optional(),
  peerNotifyDelay: uint.optional(),
});

const bridge = z.strictObject({
  interfaces: strList.optional(),
  stp: z.strictObject({ enabled: bool.optional() }).optional(),
  vlan: z.strictObject({ vlanFiltering: bool.optional() }).optional(),
});

export const vlan = z.strictObject({
  addresses: strList.optional(),
  cidr: str.optional(),
  routes: z.array(route).optional(),
  dhcp: bool.optional(),
  vlanId: uint.optional(),
  mtu: uint.optional(),
  vip: vip.optional(),
  dhcpOptions: dhcpOptions.optional(),
});

const wireguard = z.strictObject({
  privateKey: str.optional(),
  listenPort: int.optional(),
  firewallMark: int.optional(),
  peers: z
    .array(
      z.strictObject({
        publicKey: str.optional(),
        endpoint: str.optional(),
        persistentKeepaliveInterval: duration.optional(),
        allowedIPs: strList.optional(),
      }),
    )
    .optional(),
});

export const device = z.strictObject({
  interface: str.optional(),
  deviceSelector: deviceSelector.optional(),
  addresses: strList.optional(),
  cidr: str.optional(),
  routes: z.array(route).optional(),
  bond: bond.optional(),
  bridge: bridge.optional(),
  bridgePort: z.strictObject({ master: str.optional() }).optional(),
  vlans: z.array(vlan).optional(),
  mtu: int.optional(),
  dhcp: bool.optional(),
  ignore: bool.optional(),
  dummy: bool.optional(),
  dhcpOptions: dhcpOptions.optional(),
  wireguard: wireguard.optional(),
  vip: vip.optional(),
});

const kubespan = z.strictObject({
  enabled: bool.optional(),
  advertiseKubernetesNetworks: bool.optional(),
  allowDownPeerBypass: bool.optional(),
  harvestExtraEndpoints: bool.optional(),
  mtu: uint.optional(),
  filters: z
    .strictObject({ endpoints: strList.optional(), excludeAdvertisedNetworks: strList.optional() })
    .optional(),
});

export const network = z.strictObject({
  hostname: str.optional(),
  interfaces: z.array(device).optional(),
  nameservers: strList.optional(),
  searchDomains: strList.optional(),
  extraHostEntries: z.array(z.strictObject({ ip: str.optional(), aliases: strList.optional() })).optional(),
  kubespan: kubespan.optional(),
  disableSearchDomain: bool.optional(),
});

