/**
 * Observed network state in the shape of the Talos resource specs' YAML (`talosctl get … -o yaml`):
 * camelCase keys in upstream field order, enums and flags as their text, addresses as strings. Keys
 * that upstream marks `omitempty` are absent when empty. The spec shapes themselves are the resource
 * definitions' (machinery), so observation and publication can never drift apart.
 */
export type {
  LinkStatusSpec,
  AddressStatusSpec,
  RouteStatusSpec,
  ResolverStatusSpec,
  HostnameStatusSpec,
  RouteNextHop as RouteNextHopSpec,
  NameServer as NameServerSpec,
} from "../../machinery/resources/types/network.js";

export interface Observed<S> {
  /** Resource id, e.g. `eth0`, `eth0/10.5.0.2/24`, `inet4/10.5.0.1//1024`. */
  id: string;
  spec: S;
}
