/** runtime.MachineStatusController readiness: conditions appear and disappear as their inputs change. */
import { describe, expect, it } from "vitest";
import type { UnmetCondition } from "../../../src/machinery/resources/types/runtime.js";
import { MachineStatusType, RUNTIME_NS, ServiceType } from "../../../src/machinery/resources/types/runtime.js";
import { K8S_NS, NodenameType, StaticPodStatusType } from "../../../src/machinery/resources/types/k8s.js";
import { TimeStatusType } from "../../../src/machinery/resources/types/time.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { machineStatusController } from "../../../src/controllers/runtime/machine-status.js";
import { controlPlaneConfig, eventually, publishConfig, put, settle, startRuntime } from "./harness.js";

const OWNER = "runtime.MachineStatusController";
const NET = "NetworkStatuses.net.talos.dev";

function setup(opts: Partial<Parameters<typeof machineStatusController>[0]> = {}) {
  const s = new InMemoryState();
  const calls: UnmetCondition[][] = [];
  const last = () => calls[calls.length - 1];
  const names = () => last()?.map((c) => c.name);
  const reason = (name: string) => last()?.find((c) => c.name === name)?.reason;
  startRuntime(s, [machineStatusController({ setReadiness: (u) => calls.push(u), ...opts })]);
  const stage = (st: string) => put(s, RUNTIME_NS, MachineStatusType.type, "machine", { stage: st, status: { ready: false, unmetConditions: [] } }, OWNER);
  const svc = (id: string, running = true, healthy = true, unknown = false) => put(s, RUNTIME_NS, ServiceType.type, id, { running, healthy, unknown });
  return { s, calls, last, names, reason, stage, svc };
}

describe("runtime.MachineStatusController", () => {
  it("is silent outside the booting and running stages", async () => {
    const t = setup();
    t.stage("maintenance");
    await settle();
    expect(t.calls).toEqual([]);
    t.stage("booting");
    await eventually(() => t.calls.length > 0, 2000, "first readiness");
  });

  it("reports each condition with upstream's reasons until its inputs are satisfied", async () => {
    const t = setup();
    publishConfig(t.s, controlPlaneConfig());
    t.stage("running");
    await eventually(() => t.names()?.join() === "time,network,services", 2000, "initial conditions");
    expect(t.reason("time")).toBe("resource TimeStatuses.v1alpha1.talos.dev(runtime/node@undefined) doesn't exist");
    expect(t.reason("services")).toBe("apid not running, machined not running, trustd not running");

    put(t.s, RUNTIME_NS, TimeStatusType.type, "node", { synced: false, epoch: 0, syncDisabled: false });
    await eventually(() => t.reason("time") === "time is not synced", 2000, "not synced");
    put(t.s, RUNTIME_NS, TimeStatusType.type, "node", { synced: true, epoch: 0, syncDisabled: false });
    await eventually(() => !t.names()!.includes("time"), 2000, "time ok");

    put(t.s, "network", NET, "status", { addressReady: true, connectivityReady: false, hostnameReady: false, etcFilesReady: true });
    await eventually(() => t.reason("network") === "waiting on: connectivity, hostname", 2000, "network partial");
    put(t.s, "network", NET, "status", { addressReady: true, connectivityReady: true, hostnameReady: true, etcFilesReady: true });
    await eventually(() => !t.names()!.includes("network"), 2000, "network ok");

    t.svc("apid");
    t.svc("machined", true, false, true); // health unknown counts as fine
    t.svc("trustd", true, false, false);
    await eventually(() => t.reason("services") === "trustd not healthy", 2000, "trustd unhealthy");
    t.svc("trustd");
    await eventually(() => t.last()?.length === 0, 2000, "ready");

    put(t.s, K8S_NS, StaticPodStatusType.type, "kube-system/kube-apiserver-n1", { phase: "Running", conditions: [{ type: "Ready", status: "False" }] });
    await eventually(() => t.reason("staticPods") === "kube-system/kube-apiserver-n1 not ready", 2000, "pod not ready");
    put(t.s, K8S_NS, StaticPodStatusType.type, "kube-system/kube-apiserver-n1", { phase: "Running", conditions: [{ type: "Ready", status: "True" }] });
    await eventually(() => t.last()?.length === 0, 2000, "ready again");
  });

  it("with Kubernetes: requires kubelet and etcd, and the node to be Ready", async () => {
    const t = setup();
    publishConfig(t.s, controlPlaneConfig());
    put(t.s, RUNTIME_NS, TimeStatusType.type, "node", { synced: true, epoch: 0, syncDisabled: true });
    put(t.s, "network", NET, "status", { addressReady: true, connectivityReady: true, hostnameReady: true, etcFilesReady: true });
    for (const id of ["apid", "machined", "trustd"]) t.svc(id);
    put(t.s, "secrets", "KubeletSecrets.secrets.talos.dev", "kubelet", {});
    t.stage("running");
    await eventually(() => t.reason("services") === "kubelet not running, etcd not running", 2000, "k8s services");
    t.svc("kubelet");
    t.svc("etcd");
    put(t.s, K8S_NS, NodenameType.type, "nodename", { nodename: "n1", hostnameVersion: "1", skipNodeRegistration: false });
    await eventually(() => t.names()?.join() === "nodeReady", 2000, "node readiness");
    expect(t.reason("nodeReady")).toBe('node "n1" status is not available yet');
    put(t.s, K8S_NS, "NodeStatuses.kubernetes.talos.dev", "n1", { nodename: "n1", nodeReady: true, unschedulable: false });
    await eventually(() => t.last()?.length === 0, 2000, "ready");
  });

  it("takes the required services from the options", async () => {
    const t = setup({ requiredServices: () => ["machined"] });
    put(t.s, RUNTIME_NS, TimeStatusType.type, "node", { synced: true, epoch: 0, syncDisabled: true });
    put(t.s, "network", NET, "status", { addressReady: true, connectivityReady: true, hostnameReady: true, etcFilesReady: true });
    t.svc("machined");
    t.stage("booting");
    await eventually(() => t.last()?.length === 0, 2000, "ready");
  });
});
