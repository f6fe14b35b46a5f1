/** Resources of the `etcd` namespace: the local EtcdMember (talos-resource-api.md §3.1 row 21). */
import { MemberSpecSchema } from "../../api/gen/resource/definitions/etcd/etcd_pb.js";
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

export const ETCD_TYPES: ResourceType[] = [EtcdMemberType] as ResourceType[];
