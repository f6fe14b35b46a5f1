/**
 * The node-inventory resources through the real COSI API of a configured local-mode node, as `talosctl get`
 * reads them: every type lists (empty where the node has no such thing), the config-derived ones are filled in,
 * and the sensitive ones answer PermissionDenied to a reader (upstream: `get osrootsecret` needs os:admin).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { status } from "@grpc/grpc-js";
import { ApplyConfigurationRequest_Mode as Mode } from "../../src/machinery/api/gen/machine/machine_pb.js";
import { State } from "../../src/machinery/api/gen/cosi/state_pb.js";
import * as s from "../../src/machinery/api/gen/cosi/state_pb.js";
import type { TestClient } from "../helpers/client.js";
import { apply, clusterConfigs, eventually, insecureClient, mtlsClient, roleCreds, startNode, talosconfigCreds, version, type Harness } from "./harness.js";

const TYPES: [type: string, ns: string, sensitive: boolean][] = [
  ["Affiliates.cluster.talos.dev", "cluster", false],
  ["EthernetStatuses.net.talos.dev", "network", false],
  ["MemoryModules.hardware.talos.dev", "hardware", false],
  ["Processors.hardware.talos.dev", "hardware", false],
  ["PCRStatuses.hardware.talos.dev", "hardware", false],
  ["KernelCmdlines.runtime.talos.dev", "runtime", false],
  ["PlatformMetadatas.talos.dev", "runtime", false],
  ["ProbeSpecs.net.talos.dev", "network", false],
  ["SBOMItems.talos.dev", "runtime", false],
  ["SiderolinkConfigs.siderolink.talos.dev", "config", true],
  ["OSRootSecrets.secrets.talos.dev", "secrets", true],
  ["KubernetesRootSecrets.secrets.talos.dev", "secrets", true],
  ["WatchdogTimerStatuses.runtime.talos.dev", "runtime", false],
  ["DiscoveredVolumes.block.talos.dev", "runtime", false],
  ["SystemDisks.block.talos.dev", "runtime", false],
  ["VolumeConfigs.block.talos.dev", "runtime", true],
  ["EtcFileStatuses.files.talos.dev", "files", false],
  ["Manifests.kubernetes.talos.dev", "controlplane", false],
  ["ImageCacheConfigs.cri.talos.dev", "cri", false],
  ["DiscoveryConfigs.cluster.talos.dev", "config", true],
];

const list = (c: TestClient, type: string, namespace: string) =>
  c.stream(State, "List", s.ListRequestSchema, s.ListResponseSchema, { namespace, type }, { deadlineMs: 10_000 });

describe("inventory resources over COSI", () => {
  let h: Harness;
  let admin: TestClient;
  let reader: TestClient;

  beforeAll(async () => {
    h = await startNode();
    const cfgs = await clusterConfigs();
    const c = insecureClient(h);
    await apply(c, cfgs.controlplane, Mode.AUTO);
    c.close();
    admin = mtlsClient(h, talosconfigCreds(cfgs.talosconfig));
    reader = mtlsClient(h, await roleCreds(cfgs, ["os:reader"]));
    await eventually(() => version(admin));
  });
  afterAll(async () => {
    admin?.close();
    reader?.close();
    await h?.stop();
  });

  it("lists every type for an admin, with the config-derived ones filled in", async () => {
    for (const [type, ns] of TYPES) await expect(list(admin, type, ns), type).resolves.toBeDefined();
    const ids = async (type: string, ns: string) => (await list(admin, type, ns)).map((r) => r.resource?.metadata?.id);
    await eventually(async () => expect(await ids("OSRootSecrets.secrets.talos.dev", "secrets")).toEqual(["os"]));
    expect(await ids("KubernetesRootSecrets.secrets.talos.dev", "secrets")).toEqual(["k8s"]);
    expect(await ids("DiscoveryConfigs.cluster.talos.dev", "config")).toEqual(["cluster"]);
    expect(await ids("ImageCacheConfigs.cri.talos.dev", "cri")).toEqual(["image-cache"]);
    expect(await ids("KernelCmdlines.runtime.talos.dev", "runtime")).toEqual(["cmdline"]);
    expect(await ids("PlatformMetadatas.talos.dev", "runtime")).toEqual(["platformmetadata"]);
    expect(await ids("VolumeConfigs.block.talos.dev", "runtime")).toEqual(["EPHEMERAL", "STATE"]);
    expect(await ids("SBOMItems.talos.dev", "runtime")).toEqual(expect.arrayContaining(["machined", "node", "@grpc/grpc-js"]));
    expect((await ids("MemoryModules.hardware.talos.dev", "hardware")).length).toBeGreaterThan(0);
    // Nothing of these on this node: no TPM, no SideroLink, no watchdog, no probes, no Kubernetes manifests yet.
    for (const t of ["PCRStatuses.hardware.talos.dev", "SiderolinkConfigs.siderolink.talos.dev", "WatchdogTimerStatuses.runtime.talos.dev", "ProbeSpecs.net.talos.dev"]) {
      const ns = TYPES.find(([x]) => x === t)![1];
      expect(await ids(t, ns), t).toEqual([]);
    }
    const os = (await list(admin, "OSRootSecrets.secrets.talos.dev", "secrets"))[0].resource!;
    expect(os.spec?.yamlSpec).toMatch(/^issuingCA:\n    crt: /);
    expect(os.spec?.protoSpec.length).toBeGreaterThan(100);
  });

  it("refuses the sensitive ones to a reader, and serves the rest", async () => {
    for (const [type, ns, sensitive] of TYPES) {
      const res = await list(reader, type, ns).then(
        () => "ok",
        (e: { code: number }) => e.code,
      );
      expect([type, res]).toEqual([type, sensitive ? status.PERMISSION_DENIED : "ok"]);
    }
  });
});
