/**
 * Network resources beyond the core chain: EthernetStatus (per Ethernet link: carrier, speed, duplex, port; alias
 * `ethtool`) and ProbeSpec (configured connectivity probes; none unless the config asks for them).
 */
import { EthernetStatusSpecSchema, ProbeSpecSpecSchema } from "../../api/gen/resource/definitions/network/network_pb.js";
import type { ResourceType } from "../resource.js";
import { defineType } from "./define.js";

const NETWORK_NS = "network";

/** nethelpers.Port names (Go's enumer text; Fibre really prints as ""). */
export type PortName = "TwistedPair" | "AUI" | "MII" | "" | "BNC" | "DirectAttach" | "None" | "Other";
export type DuplexName = "Half" | "Full" | "Unknown";

export interface EthernetStatusSpec {
  /** Carrier; absent when the kernel does not say (Go *bool nil). */
  linkState?: boolean;
  speedMbit?: number;
  port: PortName;
  duplex: DuplexName;
  ourModes?: string[];
  peerModes?: string[];
}

const ENUMS = { "talos.resource.definitions.enums.NethelpersPort": { "": 3 } };

export const EthernetStatusType = defineType<EthernetStatusSpec>({
  type: "EthernetStatuses.net.talos.dev",
  namespace: NETWORK_NS,
  aliases: ["ethtool"],
  printColumns: [
    { name: "Link", jsonPath: "{.linkState}" },
    { name: "Speed", jsonPath: "{.speedMbit}" },
  ],
  schema: EthernetStatusSpecSchema,
  keys: ["linkState", "speedMbit", "port", "duplex", "ourModes", "peerModes"],
  omitempty: ["speedMbit", "ourModes", "peerModes"],
  proto: { fields: { speedMbit: "speed_megabits" }, enums: ENUMS },
});

export interface ProbeSpecSpec {
  interval: string;
  failureThreshold: number;
  tcp?: { endpoint: string; timeout: string };
  layer: string;
}

export const ProbeSpecType = defineType<ProbeSpecSpec>({
  type: "ProbeSpecs.net.talos.dev",
  namespace: NETWORK_NS,
  schema: ProbeSpecSpecSchema,
  keys: ["interval", "failureThreshold", "tcp", "layer"],
  omitempty: ["tcp"],
  proto: { fields: { layer: "config_layer" } },
});

export const NETWORK_EXTRA_TYPES = [EthernetStatusType, ProbeSpecType] as ResourceType[];
