/** RD data (aliases, print columns, sensitivity) against talos-resource-api.md §3.1, and both spec encodings. */
import { fromBinary, type DescMessage } from "@bufbuild/protobuf";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { DiskSpecSchema, MountStatusSpecSchema, VolumeStatusSpecSchema } from "../../../src/machinery/api/gen/resource/definitions/block/block_pb.js";
import { MemberSpecSchema } from "../../../src/machinery/api/gen/resource/definitions/cluster/cluster_pb.js";
import { MachineType, BlockVolumePhase, BlockVolumeType, RuntimeSELinuxState } from "../../../src/machinery/api/gen/resource/definitions/enums/enums_pb.js";
import { KubeletConfigSpecSchema, KubeletSpecSpecSchema, StaticPodSpecSchema } from "../../../src/machinery/api/gen/resource/definitions/k8s/k8s_pb.js";
import { SecurityStateSpecSchema } from "../../../src/machinery/api/gen/resource/definitions/runtime/runtime_pb.js";
import { StatusSpecSchema } from "../../../src/machinery/api/gen/resource/definitions/time/time_pb.js";
import { SystemInformationSpecSchema } from "../../../src/machinery/api/gen/resource/definitions/hardware/hardware_pb.js";
import { resourceDefinitionSpec } from "../../../src/machinery/resources/definitions.js";
import { TypeRegistry } from "../../../src/machinery/resources/registry.js";
import { specYaml } from "../../../src/machinery/resources/render.js";
import type { ResourceType } from "../../../src/machinery/resources/resource.js";
import { BlockMountStatusType, DiskType, VolumeStatusType } from "../../../src/machinery/resources/types/block.js";
import { MemberType, registerCoreTypes } from "../../../src/machinery/resources/types/cluster.js";
import { HARDWARE_TYPES as HardwareTypes, SystemInformationType } from "../../../src/machinery/resources/types/hardware.js";
import { KubeletConfigType, KubeletSpecType, StaticPodType } from "../../../src/machinery/resources/types/k8s.js";
import { SecurityStateType } from "../../../src/machinery/resources/types/security.js";
import { TimeStatusType } from "../../../src/machinery/resources/types/time.js";

type Row = [type: string, ns: string, display: string, aliases: string[], columns: string[], sensitive?: boolean];

/** §3.1 rows for the types this package registers: aliases (explicit + automatic) and column JSONPaths. */
const ROWS: Row[] = [
  ["Members.cluster.talos.dev", "cluster", "Member", ["member"], ["{.hostname}", "{.machineType}", "{.operatingSystem}", "{.addresses}"]],
  ["Infos.cluster.talos.dev", "cluster", "Info", ["info"], ["{.clusterId}", "{.clusterName}"]],
  ["Identities.cluster.talos.dev", "cluster", "Identity", ["identity"], ["{.nodeId}"]],
  ["StaticPods.kubernetes.talos.dev", "k8s", "StaticPod", ["staticpod", "sp", "sps"], []],
  ["StaticPodStatuses.kubernetes.talos.dev", "k8s", "StaticPodStatus", ["podstatus", "staticpodstatus", "sps"], ['{.conditions[?(@.type=="Ready")].status}']],
  ["Nodenames.kubernetes.talos.dev", "k8s", "Nodename", ["nodename"], ["{.nodename}"]],
  // §3.1 lists `kss` too, but COSI adds the plural only when the capitals ("KS") do not end in S.
  ["KubeletSpecs.kubernetes.talos.dev", "k8s", "KubeletSpec", ["kubeletspec", "ks"], [], true],
  ["KubeletStatuses.kubernetes.talos.dev", "k8s", "KubeletStatus", ["kubeletstatus", "ks"], ["{.image}"]],
  ["KubeletConfigs.kubernetes.talos.dev", "k8s", "KubeletConfig", ["kubeletconfig", "kc", "kcs"], [], true],
  ["NodeStatuses.kubernetes.talos.dev", "k8s", "NodeStatus", ["nodestatus", "ns"], ["{.nodeReady}", "{.unschedulable}"]],
  ["NodeLabelSpecs.k8s.talos.dev", "k8s", "NodeLabelSpec", ["nodelabelspec", "nls"], ["{.value}"], true],
  ["NodeAnnotationSpecs.k8s.talos.dev", "k8s", "NodeAnnotationSpec", ["nodeannotationspec", "nas"], ["{.value}"], true],
  ["NodeTaintSpecs.k8s.talos.dev", "k8s", "NodeTaintSpec", ["nodetaintspec", "nts"], ["{.effect}", "{.value}"], true],
  ["NodeCordonedSpecs.k8s.talos.dev", "k8s", "NodeCordonedSpec", ["nodecordonedspec", "ncs"], [], true],
  ["EtcdMembers.etcd.talos.dev", "etcd", "EtcdMember", ["etcdmember", "em", "ems"], ["{.memberID}"]],
  ["EtcdConfigs.etcd.talos.dev", "etcd", "EtcdConfig", ["etcdconfig", "ec", "ecs"], []],
  [
    "EtcdSpecs.etcd.talos.dev",
    "etcd",
    "EtcdSpec",
    ["etcdspec", "es"],
    ["{.name}", "{.advertisedAddresses}", "{.listenPeerAddresses}", "{.listenClientAddresses}"],
  ],
  [
    "Disks.block.talos.dev",
    "runtime",
    "Disk",
    ["disk"],
    ["{.pretty_size}", "{.readonly}", "{.transport}", "{.rotational}", "{.wwid}", "{.model}", "{.serial}"],
  ],
  ["VolumeStatuses.block.talos.dev", "runtime", "VolumeStatus", ["volumestatus", "vs"], ["{.type}", "{.phase}", "{.location}", "{.prettySize}"]],
  ["MountStatuses.block.talos.dev", "runtime", "MountStatus", ["mountstatus", "ms"], ["{.source}", "{.target}", "{.filesystem}", "{.spec.volumeID}"]],
  ["MountStatuses.runtime.talos.dev", "runtime", "MountStatus", ["mounts"], ["{.source}", "{.target}", "{.filesystemType}"]],
  ["TimeStatuses.v1alpha1.talos.dev", "runtime", "TimeStatus", ["timestatus", "ts"], ["{.synced}"]],
  [
    "SystemInformations.hardware.talos.dev",
    "hardware",
    "SystemInformation",
    ["systeminformation", "systeminformation", "si", "sis"],
    ["{.manufacturer}", "{.productName}", "{.version}", "{.serialnumber}", "{.uuid}", "{.wakeUpType}", "{.skuNumber}"],
  ],
  [
    "SecurityStates.talos.dev",
    "runtime",
    "SecurityState",
    ["securitystate", "ss"],
    ["{.secureBoot}", "{.ukiSigningKeyFingerprint}", "{.pcrSigningKeyFingerprint}", "{.selinuxState}", "{.moduleSignatureEnforced}"],
  ],
  ["MetaKeys.runtime.talos.dev", "runtime", "MetaKey", ["meta", "metakey", "mk", "mks"], ["{.value}"]],
  ["Diagnostics.runtime.talos.dev", "runtime", "Diagnostic", ["diagnostic"], ["{.message}"]],
];

describe("core resource definitions", () => {
  const registry = registerCoreTypes(new TypeRegistry());

  it("registers exactly the §3.1 types and their namespaces", () => {
    expect(registry.all().map((t) => t.type).sort()).toEqual(ROWS.map((r) => r[0]).sort());
    for (const ns of ["runtime", "cluster", "k8s", "etcd", "hardware"]) expect(registry.hasNamespace(ns)).toBe(true);
  });

  it.each(ROWS)("%s: namespace, display type, aliases, columns, sensitivity", (type, ns, display, aliases, columns, sensitive) => {
    const t = registry.get(type)!;
    const rd = resourceDefinitionSpec(t).spec;
    expect(rd.defaultNamespace).toBe(ns);
    expect(rd.displayType).toBe(display);
    expect(rd.aliases).toEqual(aliases);
    expect(rd.printColumns.map((c) => c.jsonPath)).toEqual(columns);
    expect(rd.sensitivity).toBe(sensitive ? "sensitive" : undefined);
  });

  it("runtime MountStatuses resolve only through `mounts`", () => {
    const rd = resourceDefinitionSpec(registry.get("MountStatuses.runtime.talos.dev")!).spec;
    expect(rd.allAliases).toEqual(["mounts"]);
    expect(rd.skipAutomaticAliases).toBe(true);
  });

  it("column names are the upstream ones", () => {
    const names = (type: string) => registry.get(type)!.printColumns!.map((c) => c.name);
    expect(names("Members.cluster.talos.dev")).toEqual(["Hostname", "Machine Type", "OS", "Addresses"]);
    expect(names("Disks.block.talos.dev")).toEqual(["Size", "Read Only", "Transport", "Rotational", "WWID", "Model", "Serial"]);
    expect(names("MountStatuses.runtime.talos.dev")).toEqual(["Source", "Target", "Filesystem Type"]);
  });
});

const decode = <D extends DescMessage>(schema: D, t: ResourceType<never>, spec: unknown) => fromBinary(schema, (t as ResourceType).toProto(spec));
const yamlOf = (t: ResourceType<never>, spec: unknown) => parse(specYaml(t as ResourceType, spec)) as Record<string, unknown>;

describe("core spec encodings", () => {
  it("Member: addresses as NetIP bytes, machine type enum, control plane port", () => {
    const spec = { nodeId: "abc", addresses: ["10.5.0.2", "fd00::1"], hostname: "n1", machineType: "controlplane", operatingSystem: "Talos (v1.14.0)", controlPlane: { port: 6443 } };
    const m = decode(MemberSpecSchema, MemberType, spec);
    expect([...m.addresses[0].ip]).toEqual([10, 5, 0, 2]);
    expect(m.addresses[1].ip.length).toBe(16);
    expect(m.machineType).toBe(MachineType.TYPE_CONTROL_PLANE);
    expect(Number(m.controlPlane?.apiServerPort)).toBe(6443);
    expect(yamlOf(MemberType, { ...spec, controlPlane: undefined })).not.toHaveProperty("controlPlane");
  });

  it("Disk: snake_case YAML keys with omitempty, proto fields by number", () => {
    const spec = {
      dev_path: "/dev/sda", size: 10_737_418_240, pretty_size: "11 GB", io_size: 512, sector_size: 512, readonly: false, cdrom: false,
      model: "QEMU", firmware_version: "", serial: "", modalias: "", wwid: "", uuid: "", bus_path: "/pci0000:00", sub_system: "/sys/class/block",
      transport: "virtio", rotational: false, secondary_disks: [], symlinks: [],
    };
    const y = yamlOf(DiskType, spec);
    expect(Object.keys(y)).toEqual(["dev_path", "size", "pretty_size", "io_size", "sector_size", "readonly", "cdrom", "model", "bus_path", "sub_system", "transport"]);
    const m = decode(DiskSpecSchema, DiskType, spec);
    expect(m.devPath).toBe("/dev/sda");
    expect(m.prettySize).toBe("11 GB");
    expect(Number(m.size)).toBe(10_737_418_240);
    expect(m.subSystem).toBe("/sys/class/block");
  });

  it("VolumeStatus and block MountStatus enums", () => {
    const vs = decode(VolumeStatusSpecSchema, VolumeStatusType, { phase: "ready", type: "directory", location: "/s", size: 5, filesystem: "none" });
    expect(vs.phase).toBe(BlockVolumePhase.VOLUME_PHASE_READY);
    expect(vs.type).toBe(BlockVolumeType.VOLUME_TYPE_DIRECTORY);
    expect(yamlOf(VolumeStatusType, { phase: "ready", type: "directory", filesystem: "none" })).toEqual({ phase: "ready", type: "directory" });
    const ms = decode(MountStatusSpecSchema, BlockMountStatusType, {
      spec: { volumeID: "STATE", parentID: "p", readOnly: false, detached: false, requesters: ["a"], requesterIDs: ["b"] },
      source: "/s", target: "/t", filesystem: "xfs", readOnly: true, projectQuotaSupport: false, detached: false,
    });
    expect(ms.spec?.volumeId).toBe("STATE");
    expect(ms.spec?.parentMountId).toBe("p");
    expect(ms.spec?.requesterIDs).toEqual(["b"]);
    expect(ms.readOnly).toBe(true);
  });

  it("KubeletSpec: omitempty fields, sorted config map, Struct config, OCI mounts", () => {
    const spec = {
      image: "kubelet:v1", args: ["--a=b"], extraMounts: [{ destination: "/d", type: "bind", source: "/s", options: ["rbind"], uidmappings: [], gidmappings: [] }],
      expectedNodename: "", config: { port: 10250, apiVersion: "v1beta1" },
    };
    const text = specYaml(KubeletSpecType as ResourceType, spec);
    expect(text.indexOf("apiVersion")).toBeLessThan(text.indexOf("port"));
    expect(parse(text)).not.toHaveProperty("expectedNodename");
    const m = decode(KubeletSpecSpecSchema, KubeletSpecType, spec);
    expect(m.config).toEqual({ port: 10250, apiVersion: "v1beta1" });
    expect(m.extraMounts[0]).toMatchObject({ destination: "/d", type: "bind", options: ["rbind"] });
  });

  it("KubeletConfig: extraArgs map of value lists", () => {
    const m = decode(KubeletConfigSpecSchema, KubeletConfigType, {
      image: "i", clusterDNS: ["10.96.0.10"], clusterDomain: "cluster.local", extraArgs: { "node-labels": { values: ["a=b"] } }, extraMounts: [],
      extraConfig: {}, cloudProviderExternal: false, defaultRuntimeSeccompEnabled: true, skipNodeRegistration: false, staticPodListURL: "http://x",
      disableManifestsDirectory: false, enableFSQuotaMonitoring: false, allowSchedulingOnControlPlane: true,
    });
    expect(m.extraArgs["node-labels"].values).toEqual(["a=b"]);
    expect(m.clusterDns).toEqual(["10.96.0.10"]);
    expect(m.staticPodListUrl).toBe("http://x");
    expect(m.allowSchedulingOnControlPlane).toBe(true);
  });

  it("StaticPod: the YAML spec is the manifest itself, the proto a Struct", () => {
    const pod = { kind: "Pod", apiVersion: "v1", metadata: { name: "kube-apiserver" } };
    expect(specYaml(StaticPodType as ResourceType, pod).startsWith("apiVersion: v1\nkind: Pod\n")).toBe(true);
    expect(decode(StaticPodSpecSchema, StaticPodType, pod).pod).toEqual(pod);
  });

  it("SecurityState: enum texts with commas, omitempty", () => {
    const spec = { secureBoot: false, ukiSigningKeyFingerprint: "", pcrSigningKeyFingerprint: "", selinuxState: "enabled, enforcing", fipsState: "disabled", bootedWithUKI: false, moduleSignatureEnforced: false };
    expect(decode(SecurityStateSpecSchema, SecurityStateType, spec).seLinuxState).toBe(RuntimeSELinuxState.SE_LINUX_STATE_ENFORCING);
    expect(yamlOf(SecurityStateType, spec)).toEqual({ secureBoot: false, selinuxState: "enabled, enforcing" });
  });

  it("TimeStatus and SystemInformation", () => {
    expect(decode(StatusSpecSchema, TimeStatusType, { synced: true, epoch: 2, syncDisabled: true })).toMatchObject({ synced: true, epoch: 2n, syncDisabled: true });
    const si = { manufacturer: "QEMU", serialnumber: "S1", skuNumber: "" };
    expect(decode(SystemInformationSpecSchema, SystemInformationType, si)).toMatchObject({ manufacturer: "QEMU", serialNumber: "S1" });
    expect(yamlOf(SystemInformationType, si)).toEqual({ manufacturer: "QEMU", serialnumber: "S1" });
    expect(HardwareTypes).toContain(SystemInformationType);
  });
});
