import { fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ResourceDefinitionSpecSchema } from "../../../src/machinery/api/gen/cosi/meta_pb.js";
import { DiskSpecSchema, FSScrubStatusSpecSchema } from "../../../src/machinery/api/gen/resource/definitions/block/block_pb.js";
import {
  AffiliateSpecSchema,
  MemberSpecSchema,
} from "../../../src/machinery/api/gen/resource/definitions/cluster/cluster_pb.js";
import {
  MachineType,
  NethelpersAddressFlagSchema,
  NethelpersFamily,
  NethelpersLinkType,
  NethelpersOperationalState,
  NethelpersRoutingTable,
  NethelpersScope,
  RuntimeMachineStage,
} from "../../../src/machinery/api/gen/resource/definitions/enums/enums_pb.js";
import { APIServerConfigSpecSchema, StaticPodSpecSchema } from "../../../src/machinery/api/gen/resource/definitions/k8s/k8s_pb.js";
import {
  AddressStatusSpecSchema,
  LinkStatusSpecSchema,
  RouteStatusSpecSchema,
} from "../../../src/machinery/api/gen/resource/definitions/network/network_pb.js";
import { MachineStatusSpecSchema } from "../../../src/machinery/api/gen/resource/definitions/runtime/runtime_pb.js";
import { bitflags, duration, parseIP, specToProto } from "../../../src/machinery/resources/protoenc.js";

const bytes = (...b: number[]) => new Uint8Array(b);

describe("specToProto", () => {
  it("encodes MachineStatusSpec: enum text with spaces, nested message, repeated messages", () => {
    const spec = {
      stage: "shutting down",
      status: { ready: false, unmetConditions: [{ name: "time", reason: "time is not synced" }] },
    };
    const m = fromBinary(MachineStatusSpecSchema, specToProto(MachineStatusSpecSchema, spec));
    expect(m.stage).toBe(RuntimeMachineStage.MACHINE_STAGE_SHUTTING_DOWN);
    expect(m.status?.ready).toBe(false);
    expect(m.status?.unmetConditions.map((c) => [c.name, c.reason])).toEqual([["time", "time is not synced"]]);
    const running = fromBinary(MachineStatusSpecSchema, specToProto(MachineStatusSpecSchema, { stage: "running", status: { ready: true } }));
    expect(running.stage).toBe(RuntimeMachineStage.MACHINE_STAGE_RUNNING);
    expect(running.status?.ready).toBe(true);
    // Numbers are accepted for enums as well.
    expect(fromBinary(MachineStatusSpecSchema, specToProto(MachineStatusSpecSchema, { stage: 4 })).stage).toBe(4);
  });

  it("encodes AddressStatusSpec: prefixes and addresses as text, enums, bitflags override", () => {
    const spec = {
      address: "10.5.0.2/24",
      local: "10.5.0.2",
      broadcast: "10.5.0.255",
      linkIndex: 2,
      linkName: "eth0",
      family: "inet4",
      scope: "global",
      flags: "permanent",
      priority: 1024,
      unknownField: "ignored",
    };
    const m = fromBinary(
      AddressStatusSpecSchema,
      specToProto(AddressStatusSpecSchema, spec, { fields: { flags: { encode: bitflags(NethelpersAddressFlagSchema) } } }),
    );
    expect(m.address?.ip).toEqual(bytes(10, 5, 0, 2));
    expect(m.address?.prefixLength).toBe(24);
    expect(m.local?.ip).toEqual(bytes(10, 5, 0, 2));
    expect(m.broadcast?.ip).toEqual(bytes(10, 5, 0, 255));
    expect(m.anycast).toBeUndefined();
    expect(m.linkIndex).toBe(2);
    expect(m.linkName).toBe("eth0");
    expect(m.family).toBe(NethelpersFamily.FAMILY_INET4);
    expect(m.scope).toBe(NethelpersScope.SCOPE_GLOBAL);
    expect(m.flags).toBe(128);
    expect(m.priority).toBe(1024);

    const v6 = fromBinary(AddressStatusSpecSchema, specToProto(AddressStatusSpecSchema, { address: "fd00::2/64", family: "inet6", scope: "link" }));
    expect(v6.address?.ip).toEqual(bytes(0xfd, 0, ...Array(13).fill(0), 2));
    expect(v6.address?.prefixLength).toBe(64);
    expect(v6.family).toBe(NethelpersFamily.FAMILY_INET6);
    expect(v6.scope).toBe(NethelpersScope.SCOPE_LINK);
  });

  it("encodes LinkStatusSpec: MAC text to bytes, case-insensitive keys, renames and enum aliases", () => {
    const spec = {
      index: 2,
      type: "ether",
      flags: "UP,BROADCAST,RUNNING",
      hardwareAddr: "aa:bb:cc:00:11:22",
      broadcastAddr: "ff:ff:ff:ff:ff:ff",
      mtu: 1500,
      operationalState: "up",
      kind: "",
      pciID: "8086:100E",
      productID: "0x100e",
      linkState: true,
      speedMbit: 1000,
      altNames: ["enp0s3"],
    };
    const m = fromBinary(
      LinkStatusSpecSchema,
      specToProto(LinkStatusSpecSchema, spec, {
        fields: { speedMbit: "speed_megabits", flags: { encode: bitflags({ UP: 1, BROADCAST: 2, RUNNING: 64 }) } },
      }),
    );
    expect(m.index).toBe(2);
    expect(m.type).toBe(NethelpersLinkType.LINK_ETHER);
    expect(m.flags).toBe(67);
    expect(m.hardwareAddr).toEqual(bytes(0xaa, 0xbb, 0xcc, 0x00, 0x11, 0x22));
    expect(m.broadcastAddr).toEqual(bytes(255, 255, 255, 255, 255, 255));
    expect(m.operationalState).toBe(NethelpersOperationalState.OPER_STATE_UP);
    expect(m.pciid).toBe("8086:100E");
    expect(m.productId).toBe("0x100e");
    expect(m.linkState).toBe(true);
    expect(m.speedMegabits).toBe(1000n);
    expect(m.altNames).toEqual(["enp0s3"]);

    // "down" picks OPER_STATE_DOWN over OPER_STATE_LOWER_LAYER_DOWN; irregular texts come from opts.enums.
    const lo = fromBinary(
      LinkStatusSpecSchema,
      specToProto(LinkStatusSpecSchema, { type: "loopback", operationalState: "down" }, {
        enums: { "talos.resource.definitions.enums.NethelpersLinkType": { loopback: NethelpersLinkType.LINK_LOOPBCK } },
      }),
    );
    expect(lo.type).toBe(NethelpersLinkType.LINK_LOOPBCK);
    expect(lo.operationalState).toBe(NethelpersOperationalState.OPER_STATE_DOWN);
    expect(() => specToProto(LinkStatusSpecSchema, { type: "loopback" })).toThrow(/loopback.*NethelpersLinkType/);
  });

  it("encodes cluster MemberSpec: repeated NetIP from text, machine type, nested rename", () => {
    const spec = {
      nodeId: "abc",
      addresses: ["10.5.0.2", "fd00::1", "::ffff:1.2.3.4"],
      hostname: "cp-1",
      machineType: "controlplane",
      operatingSystem: "Talos (v1.14.0)",
      controlPlane: { port: 6443 },
    };
    const m = fromBinary(
      MemberSpecSchema,
      specToProto(MemberSpecSchema, spec, { fields: { "controlPlane.port": "api_server_port" } }),
    );
    expect(m.nodeId).toBe("abc");
    expect(m.addresses.map((a) => [...a.ip])).toEqual([
      [10, 5, 0, 2],
      [0xfd, 0, ...Array(13).fill(0), 1],
      [...Array(10).fill(0), 0xff, 0xff, 1, 2, 3, 4],
    ]);
    expect(m.hostname).toBe("cp-1");
    expect(m.machineType).toBe(MachineType.TYPE_CONTROL_PLANE);
    expect(m.operatingSystem).toBe("Talos (v1.14.0)");
    expect(m.controlPlane?.apiServerPort).toBe(6443n);
    const worker = fromBinary(MemberSpecSchema, specToProto(MemberSpecSchema, { machineType: "worker", controlPlane: null }));
    expect(worker.machineType).toBe(MachineType.TYPE_WORKER);
    expect(worker.controlPlane).toBeUndefined();
  });

  it("encodes DiskSpec from snake_case YAML keys, 64-bit sizes included", () => {
    const spec = {
      dev_path: "/dev/sda",
      size: 10737418240,
      pretty_size: "11 GB",
      io_size: 512,
      sector_size: 512,
      readonly: false,
      cdrom: false,
      model: "QEMU HARDDISK",
      serial: "QM00001",
      wwid: "t10.ATA",
      bus_path: "/pci0000:00/0000:00:01.1/ata1/host0/target0:0:0/0:0:0:0",
      sub_system: "/sys/class/block",
      transport: "ata",
      rotational: true,
      secondary_disks: ["sda1"],
      symlinks: ["/dev/disk/by-id/ata-QEMU"],
      firmware_version: "2.5+",
    };
    const m = fromBinary(DiskSpecSchema, specToProto(DiskSpecSchema, spec));
    expect(m.devPath).toBe("/dev/sda");
    expect(m.size).toBe(10737418240n);
    expect(m.prettySize).toBe("11 GB");
    expect(m.ioSize).toBe(512n);
    expect(m.sectorSize).toBe(512n);
    expect(m.model).toBe("QEMU HARDDISK");
    expect(m.busPath).toContain("ata1");
    expect(m.subSystem).toBe("/sys/class/block");
    expect(m.transport).toBe("ata");
    expect(m.rotational).toBe(true);
    expect(m.secondaryDisks).toEqual(["sda1"]);
    expect(m.symlinks).toEqual(["/dev/disk/by-id/ata-QEMU"]);
    expect(m.firmwareVersion).toBe("2.5+");
    expect(fromBinary(DiskSpecSchema, specToProto(DiskSpecSchema, { size: 18446744073709551615n })).size).toBe(18446744073709551615n);
  });

  it("encodes a ResourceDefinitionSpec from its YAML shape (with renames for Go's keys)", () => {
    const spec = {
      type: "Members.cluster.talos.dev",
      displayType: "Member",
      defaultNamespace: "cluster",
      aliases: ["member"],
      allAliases: ["members", "member"],
      printColumns: [{ name: "Hostname", jsonPath: "{.hostname}" }],
      sensitivity: "sensitive",
    };
    const m = fromBinary(
      ResourceDefinitionSpecSchema,
      specToProto(ResourceDefinitionSpecSchema, spec, { fields: { type: "resource_type" } }),
    );
    expect(m.resourceType).toBe("Members.cluster.talos.dev");
    expect(m.displayType).toBe("Member");
    expect(m.allAliases).toEqual(["members", "member"]);
    expect(m.printColumns[0].jsonPath).toBe("{.hostname}");
    expect(m.sensitivity).toBe(1);
  });

  it("encodes Struct, maps of messages, Timestamp, Duration, NetIPPort and route renames", () => {
    const pod = { apiVersion: "v1", kind: "Pod", metadata: { name: "x", labels: { a: "b" } }, spec: { n: 3n, on: true, when: new Date(0) } };
    const sp = fromBinary(StaticPodSpecSchema, specToProto(StaticPodSpecSchema, { Pod: pod }));
    expect(sp.pod).toEqual({ apiVersion: "v1", kind: "Pod", metadata: { name: "x", labels: { a: "b" } }, spec: { n: 3, on: true, when: "1970-01-01T00:00:00.000Z" } });

    const api = fromBinary(
      APIServerConfigSpecSchema,
      specToProto(APIServerConfigSpecSchema, { image: "k8s", extraArgs: { "feature-gates": { values: ["A=true"] } }, environmentVariables: { HTTP_PROXY: "p" } }),
    );
    expect(api.extraArgs["feature-gates"].values).toEqual(["A=true"]);
    expect(api.environmentVariables).toEqual({ HTTP_PROXY: "p" });

    const scrub = fromBinary(
      FSScrubStatusSpecSchema,
      specToProto(FSScrubStatusSpecSchema, { mountpoint: "/var", interval: "168h0m0s", time: "2024-05-06T07:08:09.123456789Z", duration: "1.5s" }),
    );
    expect(scrub.interval?.seconds).toBe(168n * 3600n);
    expect(scrub.time?.seconds).toBe(BigInt(Date.UTC(2024, 4, 6, 7, 8, 9) / 1000));
    expect(scrub.time?.nanos).toBe(123456789);
    expect(scrub.duration?.seconds).toBe(1n);
    expect(scrub.duration?.nanos).toBe(500_000_000);

    const aff = fromBinary(AffiliateSpecSchema, specToProto(AffiliateSpecSchema, { kubespan: { endpoints: ["10.0.0.1:51820", "[fd00::1]:51820"] } }));
    expect(aff.kubeSpan?.endpoints.map((e) => [[...e.ip].length, e.port])).toEqual([
      [4, 51820],
      [16, 51820],
    ]);

    const route = fromBinary(
      RouteStatusSpecSchema,
      specToProto(RouteStatusSpecSchema, { family: "inet4", dst: "", gateway: "10.5.0.1", outLinkName: "eth0", table: "main", priority: 1024 }, { fields: { dst: "destination", src: "source" } }),
    );
    expect(route.gateway?.ip).toEqual(bytes(10, 5, 0, 1));
    expect(route.destination?.ip).toEqual(bytes());
    expect(route.destination?.prefixLength).toBe(-1);
    expect(route.table).toBe(NethelpersRoutingTable.TABLE_MAIN);
    expect(route.outLinkName).toBe("eth0");
  });

  it("reports unconvertible values with the YAML path", () => {
    expect(() => specToProto(AddressStatusSpecSchema, { flags: "permanent" })).toThrow(/flags: expected an integer/);
    expect(() => specToProto(MemberSpecSchema, { addresses: ["not-an-ip"] })).toThrow(/not-an-ip/);
  });
});

describe("helpers", () => {
  it("parses Go duration strings", () => {
    expect(duration("1m30s")).toEqual({ seconds: 90n, nanos: 0 });
    expect(duration("1h2m3.5s")).toEqual({ seconds: 3723n, nanos: 500_000_000 });
    expect(duration("250ms")).toEqual({ seconds: 0n, nanos: 250_000_000 });
    expect(duration("-1.5s")).toEqual({ seconds: -1n, nanos: -500_000_000 });
    expect(duration("0")).toEqual({ seconds: 0n, nanos: 0 });
    expect(duration("2µs")).toEqual({ seconds: 0n, nanos: 2000 });
    expect(() => duration("5 minutes")).toThrow(/invalid duration/);
    expect(() => duration("")).toThrow(/invalid duration/);
  });

  it("parses IP addresses like netip", () => {
    expect(parseIP("127.0.0.1")).toEqual(bytes(127, 0, 0, 1));
    expect(parseIP("::1")).toEqual(bytes(...Array(15).fill(0), 1));
    expect(parseIP("::")).toEqual(new Uint8Array(16));
    expect(parseIP("2001:db8::8a2e:370:7334")).toEqual(
      bytes(0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0x8a, 0x2e, 0x03, 0x70, 0x73, 0x34),
    );
    for (const bad of ["1.2.3", "256.1.1.1", "01.2.3.4", "1::2::3", "1:2:3:4:5:6:7:8:9", "gggg::", ":1"]) {
      expect(parseIP(bad), bad).toBeUndefined();
    }
  });
});
