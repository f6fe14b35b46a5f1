/**
 * Resources of the `etcd` namespace: EtcdConfig (from the machine config), EtcdSpec (what the etcd service runs
 * with: name, addresses, image, flags) and the local EtcdMember (talos-resource-api.md §3.1 row 21).
 */
import { ConfigSpecSchema, MemberSpecSchema, SpecSpecSchema } from "../../api/gen/resource/definitions/etcd/etcd_pb.js";
import { specToProto } from "../protoenc.js";
import type { ResourceType } from "../resource.js";

export const ETCD_NS = "etcd";

export interface EtcdMemberSpec {
  /** 16-digit zero-padded lower-case hex of the etcd member id. */
  memberID: string;
}

export const EtcdMemberType: ResourceType<EtcdMemberSpec> = {
  type: "EtcdMembers.etcd.talos.dev",
  defaultNamespace: ETCD_NS,
  printColumns: [{ name: "Member ID", jsonPath: "{.memberID}" }],
  toProto: (s) => specToProto(MemberSpecSchema, s),
};

/** Flag values keyed by flag name (upstream's map of ArgValues: YAML `name: {values: [...]}`). */
export type ArgValuesMap = Record<string, { values: string[] }>;

export const ETCD_ID = "etcd";

export interface EtcdConfigSpec {
  advertiseValidSubnets?: string[];
  advertiseExcludeSubnets: string[];
  listenValidSubnets?: string[];
  listenExcludeSubnets: string[];
  image: string;
  extraArgs: ArgValuesMap;
}

export const EtcdConfigType: ResourceType<EtcdConfigSpec> = {
  type: "EtcdConfigs.etcd.talos.dev",
  defaultNamespace: ETCD_NS,
  toProto: (s) => specToProto(ConfigSpecSchema, s),
};

export interface EtcdSpecSpec {
  /** The member name: the short hostname. */
  name: string;
  advertisedAddresses: string[];
  listenPeerAddresses: string[];
  listenClientAddresses: string[];
  image: string;
  extraArgs: ArgValuesMap;
}

export const EtcdSpecType: ResourceType<EtcdSpecSpec> = {
  type: "EtcdSpecs.etcd.talos.dev",
  defaultNamespace: ETCD_NS,
  printColumns: [
    { name: "Name", jsonPath: "{.name}" },
    { name: "AdvertisedAddresses", jsonPath: "{.advertisedAddresses}" },
    { name: "ListenPeerAddresses", jsonPath: "{.listenPeerAddresses}" },
    { name: "ListenClientAddresses", jsonPath: "{.listenClientAddresses}" },
  ],
  toProto: (s) => specToProto(SpecSpecSchema, s),
};

export const ETCD_TYPES: ResourceType[] = [EtcdConfigType, EtcdSpecType, EtcdMemberType] as ResourceType[];
