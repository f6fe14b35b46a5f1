/**
 * The node-inventory types and controllers: talosctl resolves each issue-14 name to exactly one type (as its
 * ResolveResourceKind does over the published RDs), both spec encodings decode, and each controller derives what
 * upstream derives (root secrets and discovery from the config, affiliate from the member, Ethernet facts,
 * volumes from a real GPT image with real filesystems, etc file versions, SideroLink from its document).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { parseAllDocuments } from "yaml";

/** The v1alpha1 document of a generated config (the first one). */
const parse = (text: string) => parseAllDocuments(text)[0].toJS() as unknown;
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OSRootSpecSchema, KubernetesRootSpecSchema } from "../../../src/machinery/api/gen/resource/definitions/secrets/secrets_pb.js";
import { ConfigSpecSchema } from "../../../src/machinery/api/gen/resource/definitions/cluster/cluster_pb.js";
import { ImageCacheConfigSpecSchema } from "../../../src/machinery/api/gen/resource/definitions/cri/cri_pb.js";
import { CriImageCacheStatus, NethelpersPort } from "../../../src/machinery/api/gen/resource/definitions/enums/enums_pb.js";
import { EthernetStatusSpecSchema } from "../../../src/machinery/api/gen/resource/definitions/network/network_pb.js";
import { resourceDefinitionSpec } from "../../../src/machinery/resources/definitions.js";
import { specYaml } from "../../../src/machinery/resources/render.js";
import { CLUSTER_NS, IdentityType } from "../../../src/machinery/resources/types/cluster.js";
import { AffiliateType, DiscoveryConfigType } from "../../../src/machinery/resources/types/discovery.js";

import { K8S_NS, NodenameType } from "../../../src/machinery/resources/types/k8s.js";
import { LinkStatusType } from "../../../src/machinery/resources/types/network.js";
import { EthernetStatusType } from "../../../src/machinery/resources/types/network-extra.js";
import { EtcFileStatusType, ImageCacheConfigType, SiderolinkConfigType } from "../../../src/machinery/resources/types/node-config.js";
import { KernelCmdlineType, SBOMItemType } from "../../../src/machinery/resources/types/runtime-info.js";
import { KubernetesRootType, OSRootType } from "../../../src/machinery/resources/types/secrets.js";
import { DiscoveredVolumeType, SystemDiskType, VolumeConfigType } from "../../../src/machinery/resources/types/volumes.js";
import { VolumeStatusType } from "../../../src/machinery/resources/types/block.js";
import { generateConfigs } from "../../../src/machinery/generate/index.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { buildRegistry } from "../../../src/pid1/registry.js";
import { discoveryConfigController } from "../../../src/controllers/cluster/discovery-config.js";
import { localAffiliateController } from "../../../src/controllers/cluster/local-affiliate.js";
import { ethernetStatusController } from "../../../src/controllers/network/ethernet-status.js";
import { discoveredVolumesController } from "../../../src/controllers/block/discovered-volumes.js";
import { systemDiskController } from "../../../src/controllers/block/system-disk.js";
import { volumeConfigController } from "../../../src/controllers/block/volume-config.js";
import { etcFileStatusController } from "../../../src/controllers/files/etc-file-status.js";
import { imageCacheConfigController } from "../../../src/controllers/cri/image-cache-config.js";
import { siderolinkConfigController } from "../../../src/controllers/siderolink/config.js";
import { kernelCmdlineController } from "../../../src/controllers/runtime/kernel-cmdline.js";
import { sbomController } from "../../../src/controllers/runtime/sbom.js";
import { lockfilePackages, readSbom } from "../../../src/host/sbom.js";
import { emptyGptTable, randomGuid, writeGpt } from "../../../src/boot/gpt/index.js";
import { openBlockIO } from "../../../src/boot/blockio.js";
import { eventually, publishConfig, put, spec, startRuntime } from "./harness.js";

/** talosctl's ResolveResourceKind: the RD whose id or any of allAliases equals the argument, case-insensitively. */
function resolve(arg: string): string[] {
  return buildRegistry()
    .all()
    .map((t) => resourceDefinitionSpec(t))
    .filter((rd) => rd.id === arg.toLowerCase() || rd.spec.allAliases.some((a) => a.toLowerCase() === arg.toLowerCase()))
    .map((rd) => rd.spec.type);
}

describe("inventory types", () => {
  it("resolves every name of issue 14 to exactly one type, sensitive ones marked", () => {
    const names: Record<string, string> = {
      affiliates: "Affiliates.cluster.talos.dev",
      ethernetstatuses: "EthernetStatuses.net.talos.dev",
      ethtool: "EthernetStatuses.net.talos.dev",
      memorymodules: "MemoryModules.hardware.talos.dev",
      ram: "MemoryModules.hardware.talos.dev",
      processors: "Processors.hardware.talos.dev",
      pcrstatuses: "PCRStatuses.hardware.talos.dev",
      kernelcmdlines: "KernelCmdlines.runtime.talos.dev",
      cmdline: "KernelCmdlines.runtime.talos.dev",
      platformmetadatas: "PlatformMetadatas.talos.dev",
      platformmetadata: "PlatformMetadatas.talos.dev",
      probespecs: "ProbeSpecs.net.talos.dev",
      sbomitems: "SBOMItems.talos.dev",
      sbom: "SBOMItems.talos.dev",
      siderolinkconfigs: "SiderolinkConfigs.siderolink.talos.dev",
      osrootsecrets: "OSRootSecrets.secrets.talos.dev",
      osrootsecret: "OSRootSecrets.secrets.talos.dev",
      kubernetesrootsecrets: "KubernetesRootSecrets.secrets.talos.dev",
      watchdogtimerstatuses: "WatchdogTimerStatuses.runtime.talos.dev",
      discoveredvolumes: "DiscoveredVolumes.block.talos.dev",
      systemdisks: "SystemDisks.block.talos.dev",
      volumeconfigs: "VolumeConfigs.block.talos.dev",
      etcfilestatus: "EtcFileStatuses.files.talos.dev",
      manifests: "Manifests.kubernetes.talos.dev",
      imagecacheconfig: "ImageCacheConfigs.cri.talos.dev",
      discoveryconfigs: "DiscoveryConfigs.cluster.talos.dev",
    };
    for (const [name, type] of Object.entries(names)) expect([name, resolve(name)]).toEqual([name, [type]]);
    const reg = buildRegistry();
    for (const t of [OSRootType, KubernetesRootType, DiscoveryConfigType, SiderolinkConfigType, VolumeConfigType]) expect(reg.get(t.type)?.sensitive).toBe(true);
    expect(reg.hasNamespace("files") && reg.hasNamespace("cri") && reg.hasNamespace("secrets")).toBe(true);
  });

  it("renders Go's field order and omitempty, and the proto decodes", () => {
    const eth = { linkState: true, port: "Other", duplex: "Unknown" } as const;
    expect(specYaml(EthernetStatusType, eth)).toBe("linkState: true\nport: Other\nduplex: Unknown\n");
    expect(fromBinary(EthernetStatusSpecSchema, EthernetStatusType.toProto(eth))).toMatchObject({ linkState: true, port: NethelpersPort.OTHER });
    const cache = { status: "disabled" as const, copyStatus: "skipped" as const, roots: [] as string[] };
    expect(specYaml(ImageCacheConfigType, cache)).toBe("status: disabled\ncopyStatus: skipped\nroots: []\n");
    expect(fromBinary(ImageCacheConfigSpecSchema, ImageCacheConfigType.toProto(cache)).status).toBe(CriImageCacheStatus.IMAGE_CACHE_STATUS_DISABLED);
  });

});

describe("inventory controllers", () => {
  let cp: string;
  let worker: string;
  beforeAll(async () => {
    const g = await generateConfigs({ clusterName: "demo", endpoint: "https://10.5.0.2:6443", installDisk: "/dev/vda", talosVersion: "v1.13" });
    cp = g.controlplane;
    worker = g.worker;
  });

  it("publishes the discovery config and, with discovery on, the local affiliate", async () => {
    const s = new InMemoryState();
    publishConfig(s, cp);
    put(s, CLUSTER_NS, IdentityType.type, "local", { nodeId: "node-id-1" });
    put(s, K8S_NS, NodenameType.type, "nodename", { nodename: "n1", hostnameVersion: "1", skipNodeRegistration: false });
    put(s, "network", "HostnameStatuses.net.talos.dev", "hostname", { hostname: "n1", domainname: "example" });
    put(s, "network", "NodeAddresses.net.talos.dev", "routed-no-k8s", { addresses: ["10.5.0.2/24"], sortAlgorithm: "v1" });
    put(s, "controlplane", "APIServerConfigs.kubernetes.talos.dev", "kube-apiserver", { localPort: 6443 });
    startRuntime(s, [discoveryConfigController(), localAffiliateController()]);
    await eventually(() => !!spec(s, CLUSTER_NS, AffiliateType.type, "node-id-1"), 3000, "affiliate");
    const secret = (parse(cp) as { cluster: { secret: string; id: string } }).cluster;
    expect(spec(s, "config", DiscoveryConfigType.type, "cluster")).toEqual({
      discoveryEnabled: true,
      registryKubernetesEnabled: false,
      registryServiceEnabled: true,
      serviceEndpoint: "discovery.talos.dev:443",
      serviceEncryptionKey: secret.secret,
      serviceClusterID: secret.id,
      serviceEndpoints: [{ name: "legacy", endpoint: "discovery.talos.dev:443", insecure: false }],
    });
    expect(fromBinary(ConfigSpecSchema, DiscoveryConfigType.toProto(spec(s, "config", DiscoveryConfigType.type, "cluster")!)).serviceEncryptionKey).toEqual(
      new Uint8Array(Buffer.from(secret.secret, "base64")),
    );
    expect(spec(s, CLUSTER_NS, AffiliateType.type, "node-id-1")).toEqual({
      nodeId: "node-id-1", addresses: ["10.5.0.2"], hostname: "n1.example", nodename: "n1", operatingSystem: "Talos (v1.14.0)", machineType: "controlplane", controlPlane: { port: 6443 },
    });
    publishConfig(s, cp.replace(/discovery:\n(\s+)enabled: true/, "discovery:\n$1enabled: false"));
    await eventually(() => !spec(s, CLUSTER_NS, AffiliateType.type, "node-id-1"), 3000, "affiliate gone");
  });

  it("publishes Ethernet facts for physical Ethernet links only", async () => {
    const s = new InMemoryState();
    put(s, "network", LinkStatusType.type, "eth0", { type: "ether", kind: "" });
    put(s, "network", LinkStatusType.type, "lo", { type: "loopback", kind: "" });
    put(s, "network", LinkStatusType.type, "br0", { type: "ether", kind: "bridge" });
    startRuntime(s, [ethernetStatusController({ read: (l) => (l === "eth0" ? { linkState: true, speedMbit: 1000, duplex: 1, port: 0 } : undefined) })]);
    await eventually(() => !!spec(s, "network", EthernetStatusType.type, "eth0"), 3000, "eth0");
    expect(spec(s, "network", EthernetStatusType.type, "eth0")).toEqual({ linkState: true, speedMbit: 1000, port: "TwistedPair", duplex: "Full" });
    expect(s.list("network", EthernetStatusType.type).map((r) => r.metadata.id)).toEqual(["eth0"]);
  });

  const mkfs = spawnSync("sh", ["-c", "command -v mkfs.ext4 && command -v mkfs.vfat"]).status === 0;
  it.skipIf(!mkfs)("discovers a GPT disk image, its partitions and their filesystems; finds it as the system disk", async () => {
    const dir = mkdtempSync(join(tmpdir(), "machined-dv-"));
    try {
      const img = join(dir, "disk.img");
      writeFileSync(img, "");
      truncateSync(img, 64 * 1024 * 1024);
      // Two partitions, written by the project's GPT writer: an ESP (vfat) at 1 MiB and STATE (ext4) after it.
      const MiB = 1024 * 1024;
      const table = emptyGptTable(64 * MiB);
      table.partitions = [
        { index: 1, typeGuid: "C12A7328-F81F-11D2-BA4B-00A0C93EC93B", uniqueGuid: randomGuid(), firstLba: 2048, lastLba: 2048 + 32768 - 1, attributes: 0n, name: "EFI" },
        { index: 2, typeGuid: "0FC63DAF-8483-4772-8E79-3D69D8477DE4", uniqueGuid: randomGuid(), firstLba: 2048 + 32768, lastLba: 2048 + 65536 - 1, attributes: 0n, name: "STATE" },
      ];
      const io = await openBlockIO(img, { write: true });
      await writeGpt(io, table);
      await io.close();
      execFileSync("mkfs.vfat", ["-F", "32", "-n", "EFI", "--offset", "2048", img, String(16 * 1024)], { stdio: "ignore" });
      execFileSync("mkfs.ext4", ["-q", "-F", "-L", "STATE", "-E", `offset=${(2048 + 32768) * 512}`, img, "16M"], { stdio: "ignore" });
      const s = new InMemoryState();
      startRuntime(s, [systemDiskController({ isSystemDisk: async (p) => p === img }), discoveredVolumesController()]);
      publishConfig(s, cp.replace("disk: /dev/vda", `disk: ${img}`));
      await eventually(() => !!spec(s, "runtime", DiscoveredVolumeType.type, "disk.img2"), 5000, "partition 2");
      expect(spec(s, "runtime", SystemDiskType.type, "system-disk")).toEqual({ diskID: "disk.img", devPath: img });
      expect(spec(s, "runtime", DiscoveredVolumeType.type, "disk.img")).toMatchObject({ type: "disk", name: "gpt", dev_path: img, size: 64 * MiB });
      expect(spec(s, "runtime", DiscoveredVolumeType.type, "disk.img1")).toMatchObject({ type: "partition", name: "vfat", label: "EFI", partition_label: "EFI", partition_index: 1, offset: MiB, parent: "disk.img" });
      expect(spec(s, "runtime", DiscoveredVolumeType.type, "disk.img2")).toMatchObject({ type: "partition", name: "ext4", label: "STATE", partition_label: "STATE", offset: MiB + 16 * MiB, size: 16 * MiB });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("gives each volume a config; publishes etc file versions as their contents change", async () => {
    const dir = mkdtempSync(join(tmpdir(), "machined-etc-"));
    try {
      await writeFile(join(dir, "hosts"), "127.0.0.1 localhost\n");
      const s = new InMemoryState();
      put(s, "runtime", VolumeStatusType.type, "STATE", { phase: "ready", type: "directory", location: "/var/x", mountSpec: { targetPath: "/var/x", selinuxLabel: "", projectQuotaSupport: false } });
      startRuntime(s, [volumeConfigController(), etcFileStatusController({ etcRoot: dir, refreshMs: 20 }), imageCacheConfigController()]);
      await eventually(() => !!spec(s, "runtime", VolumeConfigType.type, "STATE") && !!spec(s, "files", EtcFileStatusType.type, "hosts"), 3000, "configs");
      expect(specYaml(VolumeConfigType, spec(s, "runtime", VolumeConfigType.type, "STATE")!)).toBe(
        "type: directory\nprovisioning: {}\nlocator: {}\nmount:\n    targetPath: /var/x\n    selinuxLabel: \"\"\n    projectQuotaSupport: false\n",
      );
      expect(spec(s, "files", EtcFileStatusType.type, "hosts")).toEqual({ specVersion: "1" });
      expect(spec(s, "files", EtcFileStatusType.type, "resolv.conf")).toBeUndefined();
      await writeFile(join(dir, "hosts"), "127.0.0.1 localhost\n10.0.0.1 n1\n");
      await eventually(() => spec<{ specVersion: string }>(s, "files", EtcFileStatusType.type, "hosts")?.specVersion === "2", 3000, "version 2");
      expect(spec(s, "cri", ImageCacheConfigType.type, "image-cache")).toEqual({ status: "disabled", copyStatus: "skipped", roots: [] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reads the SideroLink document, the kernel command line and the SBOM", async () => {
    const root = mkdtempSync(join(tmpdir(), "machined-proc-"));
    try {
      await mkdir(join(root, "proc"));
      await writeFile(join(root, "proc/cmdline"), "console=ttyS0 talos.platform=metal\n");
      const s = new InMemoryState();
      publishConfig(s, `${cp}---\napiVersion: v1alpha1\nkind: SideroLinkConfig\napiUrl: https://siderolink.example:8099?jointoken=secret-token&grpc_tunnel=true\n`);
      const items = [{ name: "machined", version: "0.1.0", license: "MPL-2.0" }, { name: "node", version: "20.0.0", license: "MIT" }];
      startRuntime(s, [siderolinkConfigController(), kernelCmdlineController({ root }), sbomController({ read: async () => items })]);
      await eventually(
        () => !!spec(s, "config", SiderolinkConfigType.type, "siderolink") && !!spec(s, "runtime", SBOMItemType.type, "node") && !!spec(s, "runtime", KernelCmdlineType.type, "cmdline"),
        3000,
        "siderolink",
      );
      expect(spec(s, "config", SiderolinkConfigType.type, "siderolink")).toEqual({
        apiEndpoint: "https://siderolink.example:8099?jointoken=secret-token&grpc_tunnel=true",
        host: "siderolink.example:8099",
        joinToken: "secret-token",
        insecure: false,
        tunnel: true,
      });
      expect(spec(s, "runtime", KernelCmdlineType.type, "cmdline")).toEqual({ cmdline: "console=ttyS0 talos.platform=metal" });
      expect(spec(s, "runtime", SBOMItemType.type, "machined")).toEqual(items[0]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("lists this agent's own software: machined, node, and the production packages of the lockfile", async () => {
    const sbom = await readSbom();
    expect(sbom[0]).toMatchObject({ name: "machined", license: "MPL-2.0" });
    expect(sbom[1]).toMatchObject({ name: "node", version: process.version.slice(1) });
    expect(sbom.find((e) => e.name === "@grpc/grpc-js")?.version).toBe("1.14.7");
    // dev dependencies are not part of the agent
    expect(sbom.find((e) => e.name === "vitest")).toBeUndefined();
    expect(lockfilePackages({ packages: { "": {}, "node_modules/a": { version: "1.0.0", license: "MIT" }, "node_modules/b": { version: "2.0.0", dev: true }, "node_modules/a/node_modules/@s/c": { version: "3.0.0" } } })).toEqual([
      { name: "@s/c", version: "3.0.0", purls: ["pkg:npm/%40s/c@3.0.0"] },
      { name: "a", version: "1.0.0", license: "MIT", purls: ["pkg:npm/a@1.0.0"] },
    ]);
  });
});

