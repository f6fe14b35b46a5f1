/**
 * Observed network state in the shape of the Talos resource specs' YAML (`talosctl get … -o yaml`):
 * camelCase keys in upstream field order, enums and flags as their text, addresses as strings. Keys
 * that upstream marks `omitempty` are absent when empty.
 */

export interface Observed<S> {
  /** Resource id, e.g. `eth0`, `eth0/10.5.0.2/24`, `inet4/10.5.0.1//1024`. */
  id: string;
  spec: S;
}

export interface LinkStatusSpec {
  alias?: string;
  altNames?: string[];
  index: number;
  type: string;
  linkIndex: number;
  flags: string;
  hardwareAddr: string;
  permanentAddr: string;
  broadcastAddr: string;
  mtu: number;
  queueDisc: string;
  masterIndex?: number;
  operationalState: string;
  kind: string;
  slaveKind: string;
  busPath?: string;
  pciID?: string;
  driver?: string;
  driverVersion?: string;
  firmwareVersion?: string;
  productID?: string;
  vendorID?: string;
  product?: string;
  vendor?: string;
  linkState: boolean;
  speedMbit?: number;
  port: string;
  duplex: string;
  vlan?: { vlanID: number; vlanProtocol: string };
  bridgeMaster?: { stp?: { enabled: boolean }; vlan?: { filteringEnabled: boolean } };
  vrfMaster?: { table: string };
  veth?: { peerName: string };
}

export interface AddressStatusSpec {
  address: string;
  local?: string;
  broadcast?: string;
  anycast?: string;
  multicast?: string;
  linkIndex: number;
  linkName: string;
  family: string;
  scope: string;
  flags: string;
  priority: number;
}

export interface RouteNextHopSpec {
  gateway: string;
  outLinkName?: string;
  weight?: number;
}

export interface RouteStatusSpec {
  family: string;
  dst: string;
  src: string;
  gateway: string;
  outLinkIndex?: number;
  outLinkName?: string;
  table: string;
  priority: number;
  scope: string;
  type: string;
  flags: string;
  protocol: string;
  mtu?: number;
  nextHops?: RouteNextHopSpec[];
}

export interface NameServerSpec {
  addr: string;
  protocol: string;
  tlsServerName: string;
}

export interface ResolverStatusSpec {
  dnsServers: string[];
  nameServers?: NameServerSpec[];
  searchDomains: string[];
}

export interface HostnameStatusSpec {
  hostname: string;
  domainname: string;
}
