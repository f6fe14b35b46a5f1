import { readFileSync } from "node:fs";
import { fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  ResourceDefinitionSpecSchema,
  ResourceDefinitionSpec_Sensitivity,
} from "../../../src/machinery/api/gen/cosi/meta_pb.js";
import {
  namespaceType,
  resourceDefinitionSpec,
  resourceDefinitionType,
  singularize,
  type DefinitionSource,
  type ResourceDefinition,
} from "../../../src/machinery/resources/definitions.js";
import type { ResourceType } from "../../../src/machinery/resources/resource.js";

const noProto = () => new Uint8Array();
const t = (type: string, defaultNamespace: string, extra: Partial<ResourceType> = {}): ResourceType => ({
  type,
  defaultNamespace,
  toProto: noProto,
  ...extra,
});

/** The §3.1 types with the explicit aliases, columns and sensitivity Talos HEAD declares for them. */
const TYPES: DefinitionSource[] = [
  t("Members.cluster.talos.dev", "cluster", {
    printColumns: [
      { name: "Hostname", jsonPath: "{.hostname}" },
      { name: "Machine Type", jsonPath: "{.machineType}" },
      { name: "OS", jsonPath: "{.operatingSystem}" },
      { name: "Addresses", jsonPath: "{.addresses}" },
    ],
  }),
  t("Infos.cluster.talos.dev", "cluster"),
  t("Identities.cluster.talos.dev", "cluster"),
  t("StaticPods.kubernetes.talos.dev", "k8s"),
  t("StaticPodStatuses.kubernetes.talos.dev", "k8s", { aliases: ["podstatus"] }),
  t("Nodenames.kubernetes.talos.dev", "k8s"),
  t("KubeletSpecs.kubernetes.talos.dev", "k8s", { sensitive: true }),
  t("KubeletStatuses.kubernetes.talos.dev", "k8s"),
  t("NodeStatuses.kubernetes.talos.dev", "k8s"),
  t("AddressStatuses.net.talos.dev", "network", { aliases: ["address", "addresses"] }),
  t("LinkStatuses.net.talos.dev", "network", { aliases: ["link", "links"] }),
  t("RouteStatuses.net.talos.dev", "network", { aliases: ["route", "routes"] }),
  t("HostnameStatuses.net.talos.dev", "network", { aliases: ["hostname"] }),
  t("NodeAddresses.net.talos.dev", "network"),
  t("ResolverStatuses.net.talos.dev", "network", { aliases: ["resolvers"] }),
  t("TimeServerStatuses.net.talos.dev", "network", { aliases: ["timeserver", "timeservers"] }),
  t("NetworkStatuses.net.talos.dev", "network", { aliases: ["netstatus", "netstatuses"] }),
  t("Services.v1alpha1.talos.dev", "runtime", { aliases: ["svc"] }),
  t("MachineStatuses.runtime.talos.dev", "runtime"),
  t("Versions.runtime.talos.dev", "runtime"),
  t("EtcdMembers.etcd.talos.dev", "etcd"),
  t("MachineConfigs.config.talos.dev", "config", { sensitive: true }),
  t("MachineTypes.config.talos.dev", "config", { printColumns: [{ name: "Type", jsonPath: "{@}" }] }),
  t("Disks.block.talos.dev", "runtime"),
  t("VolumeStatuses.block.talos.dev", "runtime"),
  t("MountStatuses.block.talos.dev", "runtime"),
  t("MountStatuses.runtime.talos.dev", "runtime", { aliases: ["mounts"], skipAutomaticAliases: true }),
  t("TimeStatuses.v1alpha1.talos.dev", "runtime"),
  t("SystemInformations.hardware.talos.dev", "hardware", { aliases: ["systeminformation"] }),
  t("SecurityStates.talos.dev", "runtime"),
  t("MetaKeys.runtime.talos.dev", "runtime", { aliases: ["meta"] }),
  t("Diagnostics.runtime.talos.dev", "runtime"),
  t("SiderolinkStatuses.siderolink.talos.dev", "config"),
  t("KubeletConfigs.kubernetes.talos.dev", "k8s", { sensitive: true }),
  t("BootstrapManifestsConfigs.kubernetes.talos.dev", "controlplane"),
  resourceDefinitionType,
  namespaceType,
];

const RDS = new Map(TYPES.map((x) => [x.type, resourceDefinitionSpec(x)]));
const rd = (type: string) => RDS.get(type)!;

/** talosctl's ResolveResourceKind: case-insensitive match on the RD id or any of allAliases. */
function resolve(arg: string): ResourceDefinition[] {
  const a = arg.toLowerCase();
  return [...RDS.values()].filter((d) => d.id === a || d.spec.allAliases.some((x) => x.toLowerCase() === a));
}

describe("singularize", () => {
  it("matches go-pluralize for every Talos resource type name", () => {
    const lines = readFileSync(new URL("./fixtures/display-types.txt", import.meta.url), "utf8")
      .split("\n")
      .filter((l) => l && !l.startsWith("#"));
    expect(lines.length).toBeGreaterThan(190);
    const wrong = lines
      .map((l) => l.split(" "))
      .filter(([name, singular]) => singularize(name) !== singular)
      .map(([name, singular]) => `${name}: want ${singular}, got ${singularize(name)}`);
    expect(wrong).toEqual([]);
  });
});

describe("resourceDefinitionSpec", () => {
  it("fills the §3.1 display types and alias lists", () => {
    const table: [string, string, string[]][] = [
      ["Members.cluster.talos.dev", "Member", ["member"]],
      ["Infos.cluster.talos.dev", "Info", ["info"]],
      ["Identities.cluster.talos.dev", "Identity", ["identity"]],
      ["StaticPods.kubernetes.talos.dev", "StaticPod", ["staticpod", "sp", "sps"]],
      ["StaticPodStatuses.kubernetes.talos.dev", "StaticPodStatus", ["podstatus", "staticpodstatus", "sps"]],
      ["Nodenames.kubernetes.talos.dev", "Nodename", ["nodename"]],
      // §3.1 lists "kss" too, but the capitals "KS" end in S, so COSI's rule adds no "s" form.
      ["KubeletSpecs.kubernetes.talos.dev", "KubeletSpec", ["kubeletspec", "ks"]],
      ["KubeletStatuses.kubernetes.talos.dev", "KubeletStatus", ["kubeletstatus", "ks"]],
      ["NodeStatuses.kubernetes.talos.dev", "NodeStatus", ["nodestatus", "ns"]],
      ["AddressStatuses.net.talos.dev", "AddressStatus", ["address", "addresses", "addressstatus", "as"]],
      ["LinkStatuses.net.talos.dev", "LinkStatus", ["link", "links", "linkstatus", "ls"]],
      ["RouteStatuses.net.talos.dev", "RouteStatus", ["route", "routes", "routestatus", "rs"]],
      ["HostnameStatuses.net.talos.dev", "HostnameStatus", ["hostname", "hostnamestatus", "hs"]],
      ["NodeAddresses.net.talos.dev", "NodeAddress", ["nodeaddress", "na", "nas"]],
      ["ResolverStatuses.net.talos.dev", "ResolverStatus", ["resolvers", "resolverstatus", "rs"]],
      ["TimeServerStatuses.net.talos.dev", "TimeServerStatus", ["timeserver", "timeservers", "timeserverstatus", "tss"]],
      ["NetworkStatuses.net.talos.dev", "NetworkStatus", ["netstatus", "netstatuses", "networkstatus", "ns"]],
      ["Services.v1alpha1.talos.dev", "Service", ["svc", "service"]],
      ["MachineStatuses.runtime.talos.dev", "MachineStatus", ["machinestatus", "ms"]],
      ["Versions.runtime.talos.dev", "Version", ["version"]],
      ["EtcdMembers.etcd.talos.dev", "EtcdMember", ["etcdmember", "em", "ems"]],
      ["MachineConfigs.config.talos.dev", "MachineConfig", ["machineconfig", "mc", "mcs"]],
      ["MachineTypes.config.talos.dev", "MachineType", ["machinetype", "mt", "mts"]],
      ["Disks.block.talos.dev", "Disk", ["disk"]],
      ["VolumeStatuses.block.talos.dev", "VolumeStatus", ["volumestatus", "vs"]],
      ["MountStatuses.block.talos.dev", "MountStatus", ["mountstatus", "ms"]],
      ["MountStatuses.runtime.talos.dev", "MountStatus", ["mounts"]],
      ["TimeStatuses.v1alpha1.talos.dev", "TimeStatus", ["timestatus", "ts"]],
      ["SystemInformations.hardware.talos.dev", "SystemInformation", ["systeminformation", "systeminformation", "si", "sis"]],
      ["SecurityStates.talos.dev", "SecurityState", ["securitystate", "ss"]],
      ["MetaKeys.runtime.talos.dev", "MetaKey", ["meta", "metakey", "mk", "mks"]],
      ["Diagnostics.runtime.talos.dev", "Diagnostic", ["diagnostic"]],
      ["SiderolinkStatuses.siderolink.talos.dev", "SiderolinkStatus", ["siderolinkstatus", "ss"]],
      ["KubeletConfigs.kubernetes.talos.dev", "KubeletConfig", ["kubeletconfig", "kc", "kcs"]],
      ["BootstrapManifestsConfigs.kubernetes.talos.dev", "BootstrapManifestsConfig", ["bootstrapmanifestsconfig", "bmc", "bmcs"]],
      ["ResourceDefinitions.meta.cosi.dev", "ResourceDefinition", ["api-resources", "resourcedefinition", "rd", "rds"]],
      ["Namespaces.meta.cosi.dev", "Namespace", ["ns", "namespace"]],
    ];
    expect(table).toHaveLength(TYPES.length);
    for (const [type, display, aliases] of table) {
      expect({ type, display: rd(type).spec.displayType, aliases: rd(type).spec.aliases }).toEqual({ type, display, aliases });
    }
  });

  it("builds allAliases from the lowercase name, its suffix prefixes, then the aliases", () => {
    expect(rd("Members.cluster.talos.dev").spec.allAliases).toEqual([
      "members",
      "members.cluster",
      "members.cluster.talos",
      "member",
    ]);
    expect(rd("Services.v1alpha1.talos.dev").spec.allAliases).toEqual([
      "services",
      "services.v1alpha1",
      "services.v1alpha1.talos",
      "svc",
      "service",
    ]);
    expect(rd("SecurityStates.talos.dev").spec.allAliases).toEqual(["securitystates", "securitystates.talos", "securitystate", "ss"]);
    expect(rd("MountStatuses.runtime.talos.dev").spec.allAliases).toEqual(["mounts"]);
  });

  it("resolves every §2.2 talosctl argument to the expected type and default namespace", () => {
    const table: [string[], string, string][] = [
      [["members"], "Members.cluster.talos.dev", "cluster"],
      [["staticpods"], "StaticPods.kubernetes.talos.dev", "k8s"],
      [["staticpodstatus", "podstatus"], "StaticPodStatuses.kubernetes.talos.dev", "k8s"],
      [["addresses", "address"], "AddressStatuses.net.talos.dev", "network"],
      [["links", "link"], "LinkStatuses.net.talos.dev", "network"],
      [["routes", "route"], "RouteStatuses.net.talos.dev", "network"],
      [["hostname"], "HostnameStatuses.net.talos.dev", "network"],
      [["services", "svc", "service"], "Services.v1alpha1.talos.dev", "runtime"],
      [["machineconfig", "mc", "MachineConfigs"], "MachineConfigs.config.talos.dev", "config"],
      [["nodename"], "Nodenames.kubernetes.talos.dev", "k8s"],
      [["etcdmembers", "etcdmember", "em"], "EtcdMembers.etcd.talos.dev", "etcd"],
      [["disks", "disk"], "Disks.block.talos.dev", "runtime"],
      [["mounts", "mountstatuses.runtime.talos.dev"], "MountStatuses.runtime.talos.dev", "runtime"],
      [["mountstatus"], "MountStatuses.block.talos.dev", "runtime"],
      [["volumestatus", "vs"], "VolumeStatuses.block.talos.dev", "runtime"],
      [["machinestatus"], "MachineStatuses.runtime.talos.dev", "runtime"],
      [["version"], "Versions.runtime.talos.dev", "runtime"],
      [["timestatus"], "TimeStatuses.v1alpha1.talos.dev", "runtime"],
      [["kubeletspec"], "KubeletSpecs.kubernetes.talos.dev", "k8s"],
      [["rd", "api-resources"], "ResourceDefinitions.meta.cosi.dev", "meta"],
    ];
    for (const [args, type, ns] of table) {
      for (const arg of args) {
        const found = resolve(arg).map((d) => [d.spec.type, d.spec.defaultNamespace]);
        expect({ arg, found }).toEqual({ arg, found: [[type, ns]] });
      }
    }
  });

  it("leaves the known short aliases ambiguous, as real talosctl does", () => {
    expect(resolve("ms").map((d) => d.spec.type).sort()).toEqual([
      "MachineStatuses.runtime.talos.dev",
      "MountStatuses.block.talos.dev",
    ]);
    expect(resolve("ns").length).toBe(3);
    expect(resolve("sps").length).toBe(2);
    expect(resolve("rs").length).toBe(2);
    // mountstatuses (no suffix) only names the block type: the runtime one skips automatic aliases.
    expect(resolve("mountstatuses").map((d) => d.spec.type)).toEqual(["MountStatuses.block.talos.dev"]);
  });

  it("produces the YAML shape in Go's key order, with omitempty fields only when set", () => {
    expect(Object.keys(rd("Members.cluster.talos.dev").spec)).toEqual([
      "type",
      "displayType",
      "defaultNamespace",
      "aliases",
      "allAliases",
      "printColumns",
    ]);
    expect(Object.keys(rd("MountStatuses.runtime.talos.dev").spec)).toEqual([
      "type",
      "displayType",
      "defaultNamespace",
      "aliases",
      "allAliases",
      "skipAutomaticAliases",
      "printColumns",
    ]);
    expect(rd("MachineConfigs.config.talos.dev").spec).toMatchObject({ sensitivity: "sensitive", printColumns: [] });
    expect(rd("MachineConfigs.config.talos.dev").id).toBe("machineconfigs.config.talos.dev");
  });

  it("encodes cosi.resource.meta.ResourceDefinitionSpec", () => {
    const members = fromBinary(ResourceDefinitionSpecSchema, rd("Members.cluster.talos.dev").toProto());
    expect(members.resourceType).toBe("Members.cluster.talos.dev");
    expect(members.displayType).toBe("Member");
    expect(members.defaultNamespace).toBe("cluster");
    expect(members.aliases).toEqual(["member"]);
    expect(members.allAliases).toEqual(["members", "members.cluster", "members.cluster.talos", "member"]);
    expect(members.printColumns.map((c) => [c.name, c.jsonPath])).toEqual([
      ["Hostname", "{.hostname}"],
      ["Machine Type", "{.machineType}"],
      ["OS", "{.operatingSystem}"],
      ["Addresses", "{.addresses}"],
    ]);
    expect(members.sensitivity).toBe(ResourceDefinitionSpec_Sensitivity.NON_SENSITIVE);
    const mc = fromBinary(ResourceDefinitionSpecSchema, rd("MachineConfigs.config.talos.dev").toProto());
    expect(mc.sensitivity).toBe(ResourceDefinitionSpec_Sensitivity.SENSITIVE);
    // The RD type's own encoder agrees with the helper.
    const own = resourceDefinitionType.toProto(rd("Members.cluster.talos.dev").spec);
    expect(own).toEqual(rd("Members.cluster.talos.dev").toProto());
  });

  it("rejects type strings COSI would reject", () => {
    expect(() => resourceDefinitionSpec(t("members.cluster.talos.dev", "x"))).toThrow(/CamelCase/);
    expect(() => resourceDefinitionSpec(t("Members", "x"))).toThrow(/suffix/);
    expect(() => resourceDefinitionSpec(t("Members.Cluster", "x"))).toThrow(/suffix/);
    expect(() => resourceDefinitionSpec(t("Glass.cluster.talos.dev", "x"))).toThrow(/plural/);
  });
});
