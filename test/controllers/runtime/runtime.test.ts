/** Diagnostics, MetaKeys, SecurityState, and the whole core controller set converging together. */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ControllerStatus } from "../../../src/state/runtime/index.js";
import { DiagnosticType, SecurityStateType, type DiagnosticSpec } from "../../../src/machinery/resources/types/security.js";
import { MetaKeyType } from "../../../src/machinery/resources/types/block.js";
import { MachineStatusType, RUNTIME_NS, type UnmetCondition } from "../../../src/machinery/resources/types/runtime.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { diagnosticsController } from "../../../src/controllers/runtime/diagnostics.js";
import { metaKeyController } from "../../../src/controllers/runtime/meta-keys.js";
import { securityStateController } from "../../../src/controllers/runtime/security-state.js";
import { coreControllers } from "../../../src/controllers/runtime/core.js";
import { registerInventoryTypes } from "../../../src/machinery/resources/types/inventory.js";
import { registerCoreTypes } from "../../../src/machinery/resources/types/cluster.js";
import { TypeRegistry } from "../../../src/machinery/resources/registry.js";
import { specYaml } from "../../../src/machinery/resources/render.js";
import { controlPlaneConfig, eventually, publishConfig, put, spec, startRuntime } from "./harness.js";

const dirs: string[] = [];
// Controllers may still be finishing a write when a test ends: retry the cleanup.
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 })));
});
const tmp = async () => {
  const d = await mkdtemp(join(tmpdir(), "machined-core-"));
  dirs.push(d);
  return d;
};

const failing = (name: string, n: number): ControllerStatus => ({ name, runs: n, running: false, consecutiveFailures: n, lastError: "boom" });

describe("runtime.DiagnosticsController", () => {
  it("reports a repeatedly failing controller after the hysteresis, and clears it once it recovers", async () => {
    let clock = 0;
    let statuses: ControllerStatus[] = [failing("k8s.KubeletSpecController", 1)];
    const s = new InMemoryState();
    startRuntime(s, [diagnosticsController({ statuses: () => statuses, now: () => clock, hysteresisMs: 1000, intervalMs: 5 })]);
    const id = "controller-failing-k8s.KubeletSpecController";
    await new Promise((r) => setTimeout(r, 30));
    expect(s.list(RUNTIME_NS, DiagnosticType.type)).toEqual([]);
    statuses = [failing("k8s.KubeletSpecController", 3)];
    await new Promise((r) => setTimeout(r, 30));
    expect(s.list(RUNTIME_NS, DiagnosticType.type)).toEqual([]); // still inside the hysteresis
    clock = 2000;
    await eventually(() => !!spec(s, RUNTIME_NS, DiagnosticType.type, id), 2000, "diagnostic");
    expect(spec<DiagnosticSpec>(s, RUNTIME_NS, DiagnosticType.type, id)).toEqual({
      message: "controller k8s.KubeletSpecController is failing",
      details: ["last error: boom", "consecutive failures: 3"],
    });
    statuses = [];
    await eventually(() => s.list(RUNTIME_NS, DiagnosticType.type).length === 0, 2000, "cleared");
  });

  it("detects host addresses swallowed by the Kubernetes CIDRs", async () => {
    const s = new InMemoryState();
    startRuntime(s, [diagnosticsController({ hysteresisMs: 0, intervalMs: 5 })]);
    publishConfig(s, controlPlaneConfig());
    put(s, "network", "NodeAddresses.net.talos.dev", "routed", { addresses: ["10.96.0.5/24"] });
    put(s, "network", "NodeAddresses.net.talos.dev", "routed-no-k8s", { addresses: [] });
    await eventually(() => !!spec(s, RUNTIME_NS, DiagnosticType.type, "address-overlap"), 2000, "overlap");
    expect(spec<DiagnosticSpec>(s, RUNTIME_NS, DiagnosticType.type, "address-overlap")).toEqual({
      message: "host and Kubernetes pod/service CIDR addresses overlap",
      details: ['host routed addresses: ["10.96.0.5/24"]', 'Kubernetes pod CIDRs: ["10.244.0.0/16"]', 'Kubernetes service CIDRs: ["10.96.0.0/12"]'],
    });
    put(s, "network", "NodeAddresses.net.talos.dev", "routed-no-k8s", { addresses: ["192.168.0.2/24"] });
    await eventually(() => !spec(s, RUNTIME_NS, DiagnosticType.type, "address-overlap"), 2000, "resolved");
  });
});

describe("runtime.MetaKeyController and runtime.SecurityStateController", () => {
  it("publishes META tags by hex id (none in local mode)", async () => {
    const s = new InMemoryState();
    startRuntime(s, [metaKeyController({ read: async () => [[0x0a, "hello"], [0xc0, "x"]] })]);
    await eventually(() => s.list(RUNTIME_NS, MetaKeyType.type).length === 2, 2000, "meta");
    expect(s.list(RUNTIME_NS, MetaKeyType.type).map((r) => [r.metadata.id, r.spec])).toEqual([["0x0a", { value: "hello" }], ["0xc0", { value: "x" }]]);
  });

  it("reads SELinux, FIPS and module signing state from the kernel; Secure Boot is off", async () => {
    const root = await tmp();
    await mkdir(join(root, "sys/fs/selinux"), { recursive: true });
    await writeFile(join(root, "sys/fs/selinux/enforce"), "0\n");
    await mkdir(join(root, "sys/module/module/parameters"), { recursive: true });
    await writeFile(join(root, "sys/module/module/parameters/sig_enforce"), "Y\n");
    const s = new InMemoryState();
    startRuntime(s, [securityStateController({ root })]);
    await eventually(() => !!spec(s, RUNTIME_NS, SecurityStateType.type, "securitystate"), 2000, "security");
    expect(spec(s, RUNTIME_NS, SecurityStateType.type, "securitystate")).toMatchObject({
      secureBoot: false,
      selinuxState: "enabled, permissive",
      fipsState: "disabled",
      moduleSignatureEnforced: true,
    });
  });
});

describe("coreControllers", () => {
  it("all converge together on a control plane config without failures", async () => {
    const dir = await tmp();
    const readiness: UnmetCondition[][] = [];
    const s = new InMemoryState();
    const rt = startRuntime(
      s,
      coreControllers({
        stateDir: dir,
        setReadiness: (u) => readiness.push(u),
        discoverDisks: async () => [],
        hostRoot: dir,
        fallbackAddresses: () => ["10.5.0.2"],
        etcdMemberId: async () => 1n,
        runtimeStatuses: () => rt.statuses(),
      }),
    );
    // Discovery on (Kubernetes registry only: no Node here, so the node knows itself alone).
    publishConfig(s, controlPlaneConfig({ clusterExtra: "  discovery:\n    enabled: true\n    registries:\n      service:\n        disabled: true\n" }));
    // The kubelet config waits for the static pod server (k8s.StaticPodServerController, not a core controller).
    put(s, "k8s", "StaticPodServerStatuses.kubernetes.talos.dev", "static-pod-server-status", { url: "http://127.0.0.1:1" }, "k8s.StaticPodServerController");
    put(s, RUNTIME_NS, MachineStatusType.type, "machine", { stage: "running", status: { ready: false, unmetConditions: [] } }, "runtime.MachineStatusController");
    await eventually(() => s.list("cluster", "Members.cluster.talos.dev").length === 1, 3000, "member");
    await eventually(() => !!spec(s, "k8s", "KubeletSpecs.kubernetes.talos.dev", "kubelet"), 3000, "kubelet spec");
    await eventually(() => s.list(RUNTIME_NS, "VolumeStatuses.block.talos.dev").length === 2, 3000, "volumes");
    expect(rt.statuses().filter((st) => st.consecutiveFailures > 0)).toEqual([]);
    expect(rt.dependencyGraph().some((e) => e.controllerName === "cluster.MemberController" && e.edgeType === "OUTPUT_EXCLUSIVE")).toBe(true);
    await eventually(() => readiness.length > 0, 2000, "readiness");
    expect(readiness[readiness.length - 1].map((c) => c.name)).toEqual(["network", "services"]);

    // Every published resource renders in both encodings (what the COSI API sends).
    let rendered = 0;
    for (const t of registerInventoryTypes(registerCoreTypes(new TypeRegistry())).all()) {
      for (const r of s.list(t.defaultNamespace, t.type)) {
        expect(specYaml(t, r.spec).length).toBeGreaterThan(0);
        expect(t.toProto(r.spec)).toBeInstanceOf(Uint8Array);
        rendered++;
      }
    }
    // (The control plane's static pods and configs render in test/controllers/k8s/control-plane.test.ts.)
    expect(rendered).toBeGreaterThanOrEqual(10);
  });
});
