/**
 * runtime.MachineStatusController, readiness half: while the machine is booting or running, computes
 * the unmet readiness conditions (talos-resource-api.md §4.1: time, network, services, staticPods,
 * nodeReady) from the resources and hands them to the lifecycle's MachineStatus tracker through the
 * injected `setReadiness` (the tracker owns the stage and writes the MachineStatus resource, under
 * this same controller name, which is why MachineStatus is declared as this controller's output).
 */
import { MachineStatusType, RUNTIME_NS, ServiceType, type UnmetCondition } from "../../machinery/resources/types/runtime.js";
import { K8S_NS, NodenameType, StaticPodStatusType } from "../../machinery/resources/types/k8s.js";
import { TimeStatusType } from "../../machinery/resources/types/time.js";
import type { MachineTypeName } from "../../machinery/resources/types/config.js";
import type { Controller, ReconcileContext } from "../../state/runtime/index.js";
import { isControlPlane, machineType, machineTypeInput } from "../../machinery/resources/types/config.js";
import { NETWORK_NS, NETWORK_STATUS_ID, NetworkStatusType } from "../../machinery/resources/types/network.js";
import { KubeletSecretsType, SECRETS_NS } from "../../machinery/resources/types/secrets.js";
import { NodeStatusType } from "../../machinery/resources/types/k8s.js";
import { readAll, readSpec } from "../../machinery/resources/read.js";

export interface MachineStatusOptions {
  /** Receives the unmet conditions (empty = ready); called only in the booting and running stages. */
  setReadiness: (unmet: UnmetCondition[]) => void;
  /** Services that must run; default as upstream: apid, machined (+kubelet with Kubernetes; +etcd with Kubernetes and +trustd on control planes). */
  requiredServices?: (machineType: MachineTypeName | undefined, hasKubernetes: boolean) => string[];
  /** Whether the node runs Kubernetes; default: a KubeletSecrets resource exists (upstream's test). */
  hasKubernetes?: (ctx: Pick<ReconcileContext, "list">) => boolean;
}

export function defaultRequiredServices(mt: MachineTypeName | undefined, hasKubernetes: boolean): string[] {
  const req = ["apid", "machined"];
  if (hasKubernetes) req.push("kubelet");
  if (isControlPlane(mt)) {
    if (hasKubernetes) req.push("etcd");
    req.push("trustd");
  }
  return req;
}

/** The message a typed Get of a missing resource fails with in Talos. */
const missing = (ns: string, type: string, id: string) => `resource ${type}(${ns}/${id}@undefined) doesn't exist`;

type Check = (ctx: Pick<ReconcileContext, "get" | "list">) => string | undefined;

const timeCheck: Check = (ctx) => {
  const s = readSpec(ctx, TimeStatusType, "node");
  if (!s) return missing(RUNTIME_NS, TimeStatusType.type, "node");
  return s.synced ? undefined : "time is not synced";
};

const networkCheck: Check = (ctx) => {
  const s = readSpec(ctx, NetworkStatusType, NETWORK_STATUS_ID);
  if (!s) return missing(NETWORK_NS, NetworkStatusType.type, NETWORK_STATUS_ID);
  const notReady = [
    [s.addressReady, "address"],
    [s.connectivityReady, "connectivity"],
    [s.etcFilesReady, "etc-files"],
    [s.hostnameReady, "hostname"],
  ]
    .filter(([ok]) => !ok)
    .map(([, name]) => name);
  return notReady.length === 0 ? undefined : `waiting on: ${notReady.join(", ")}`;
};

const servicesCheck =
  (required: string[]): Check =>
  (ctx) => {
    const problems: string[] = [];
    const running = new Set<string>();
    for (const r of readAll(ctx, ServiceType)) {
      const s = r.spec;
      if (!s.running) {
        problems.push(`${r.metadata.id} not running`);
        continue;
      }
      running.add(r.metadata.id);
      if (!s.unknown && !s.healthy) problems.push(`${r.metadata.id} not healthy`);
    }
    for (const svc of required) if (!running.has(svc)) problems.push(`${svc} not running`);
    return problems.length === 0 ? undefined : problems.join(", ");
  };

const staticPodsCheck: Check = (ctx) => {
  const problems: string[] = [];
  for (const r of readAll(ctx, StaticPodStatusType)) {
    const status = r.spec;
    const phase = status.phase ?? "";
    if (phase === "Pending" || phase === "Failed" || phase === "Unknown") problems.push(`${r.metadata.id} ${phase.toLowerCase()}`);
    else if (phase === "Running") {
      const ready = status.conditions?.find((c) => c.type === "Ready")?.status === "True";
      if (!ready) problems.push(`${r.metadata.id} not ready`);
    }
  }
  return problems.length === 0 ? undefined : problems.join(", ");
};

const nodeReadyCheck: Check = (ctx) => {
  const n = readSpec(ctx, NodenameType, "nodename");
  // No node name yet, or the node is not registered at all: nothing to wait for.
  if (!n || n.skipNodeRegistration) return undefined;
  const status = readSpec(ctx, NodeStatusType, n.nodename);
  if (!status) return `node ${JSON.stringify(n.nodename)} status is not available yet`;
  return status.nodeReady ? undefined : `node ${JSON.stringify(n.nodename)} is not ready`;
};

/** The unmet conditions in upstream's order; [] when ready. */
export function readinessConditions(
  ctx: Pick<ReconcileContext, "get" | "list">,
  required: string[],
  hasKubernetes: boolean,
): UnmetCondition[] {
  const checks: [string, Check][] = [
    ["time", timeCheck],
    ["network", networkCheck],
    ["services", servicesCheck(required)],
    ["staticPods", staticPodsCheck],
  ];
  if (hasKubernetes) checks.push(["nodeReady", nodeReadyCheck]);
  const unmet: UnmetCondition[] = [];
  for (const [name, check] of checks) {
    const reason = check(ctx);
    if (reason !== undefined) unmet.push({ name, reason });
  }
  return unmet;
}

export function machineStatusController(opts: MachineStatusOptions): Controller {
  const required = opts.requiredServices ?? defaultRequiredServices;
  const hasKubernetes = opts.hasKubernetes ?? ((ctx) => readAll(ctx, KubeletSecretsType).length > 0);
  return {
    name: "runtime.MachineStatusController",
    inputs: [
      { namespace: RUNTIME_NS, type: TimeStatusType.type, id: "node", kind: "weak" },
      { namespace: NETWORK_NS, type: NetworkStatusType.type, id: NETWORK_STATUS_ID, kind: "weak" },
      { namespace: RUNTIME_NS, type: ServiceType.type, kind: "weak" },
      { namespace: K8S_NS, type: StaticPodStatusType.type, kind: "weak" },
      machineTypeInput,
      { namespace: K8S_NS, type: NodenameType.type, id: "nodename", kind: "weak" },
      { namespace: K8S_NS, type: NodeStatusType.type, kind: "weak" },
      { namespace: SECRETS_NS, type: KubeletSecretsType.type, kind: "weak" },
      // The stage lives in the tracker; its resource tells us when readiness matters.
      { namespace: RUNTIME_NS, type: MachineStatusType.type, id: "machine", kind: "weak" },
    ],
    outputs: [{ type: MachineStatusType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const status = readSpec(ctx, MachineStatusType, "machine");
      if (status?.stage !== "booting" && status?.stage !== "running") return;
      const k8s = hasKubernetes(ctx);
      // setReadiness must be idempotent: our own MachineStatus update wakes us again with the same result.
      opts.setReadiness(readinessConditions(ctx, required(machineType(ctx), k8s), k8s));
    },
  };
}
