/**
 * runtime.DiagnosticsController: Diagnostics (`runtime`/<check id>) — warnings about problems the
 * node cannot fix itself, which `talosctl health` reports under "no diagnostics". Checks:
 *  - `controller-failing-<name>`: a controller whose reconcile failed `failureThreshold` times in a
 *    row (from the controller runtime's statuses), with its last error;
 *  - `address-overlap` (as upstream): every routed host address falls into the Kubernetes pod/service
 *    CIDRs, so none is left for the node itself.
 * A warning is published only after it has persisted for `hysteresisMs` (upstream: 30 s), so
 * transient states do not flap.
 */
import { DiagnosticType, type DiagnosticSpec } from "../../machinery/resources/types/security.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import type { Controller, ControllerStatus, ReconcileContext } from "../../state/runtime/index.js";
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { NETWORK_NS, NodeAddressType } from "../../machinery/resources/types/network.js";
import { readSpec } from "../../machinery/resources/read.js";
import { podCIDRs, serviceCIDRs } from "../../machinery/kubernetes/network.js";
import { quoteList } from "../../machinery/format.js";

export const DIAGNOSTICS_CONTROLLER = "runtime.DiagnosticsController";

export interface DiagnosticsOptions {
  /** Controller runtime statuses, e.g. `() => runtime.statuses()`. */
  statuses?: () => ControllerStatus[];
  failureThreshold?: number;
  hysteresisMs?: number;
  /** Re-check period (controller statuses are not resources, so they are polled). Default 5 s. */
  intervalMs?: number;
  now?: () => number;
}

export function controllerFailing(statuses: ControllerStatus[], threshold: number): Map<string, DiagnosticSpec> {
  const out = new Map<string, DiagnosticSpec>();
  for (const s of statuses) {
    if (s.name === DIAGNOSTICS_CONTROLLER || s.consecutiveFailures < threshold) continue;
    const details = [`last error: ${s.lastError ?? "unknown"}`, `consecutive failures: ${s.consecutiveFailures}`];
    if (s.lastSuccessAt) details.push(`last success: ${s.lastSuccessAt.toISOString()}`);
    if (s.retryAt) details.push(`next retry: ${s.retryAt.toISOString()}`);
    out.set(`controller-failing-${s.name}`, { message: `controller ${s.name} is failing`, details });
  }
  return out;
}

export function addressOverlap(ctx: Pick<ReconcileContext, "get">): DiagnosticSpec | undefined {
  const get = (id: string) => readSpec(ctx, NodeAddressType, id);
  const routed = get("routed");
  const minusK8s = get("routed-no-k8s");
  const cfg = machineConfig(ctx);
  if (!routed || !minusK8s || !cfg) return undefined;
  if ((routed.addresses ?? []).length === 0 || (minusK8s.addresses ?? []).length > 0) return undefined;
  const details = [`host routed addresses: ${quoteList(routed.addresses ?? [])}`];
  if (cfg.cluster) {
    details.push(`Kubernetes pod CIDRs: ${quoteList(podCIDRs(cfg))}`, `Kubernetes service CIDRs: ${quoteList(serviceCIDRs(cfg))}`);
  }
  return { message: "host and Kubernetes pod/service CIDR addresses overlap", details };
}

export function diagnosticsController(opts: DiagnosticsOptions = {}): Controller {
  const now = opts.now ?? Date.now;
  const hysteresis = opts.hysteresisMs ?? 30_000;
  const firstSeen = new Map<string, number>();
  return {
    name: DIAGNOSTICS_CONTROLLER,
    inputs: [{ namespace: NETWORK_NS, type: NodeAddressType.type, kind: "weak" }, machineConfigInput],
    outputs: [{ type: DiagnosticType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const found = controllerFailing(opts.statuses?.() ?? [], opts.failureThreshold ?? 3);
      const overlap = addressOverlap(ctx);
      if (overlap) found.set("address-overlap", overlap);
      const keep: string[] = [];
      const t = now();
      for (const id of [...firstSeen.keys()]) if (!found.has(id)) firstSeen.delete(id);
      for (const [id, spec] of found) {
        if (!firstSeen.has(id)) firstSeen.set(id, t);
        if (t - firstSeen.get(id)! < hysteresis) continue;
        ctx.apply({ namespace: RUNTIME_NS, type: DiagnosticType.type, id, spec });
        keep.push(id);
      }
      ctx.cleanup(RUNTIME_NS, DiagnosticType.type, keep);
      return { requeueAfterMs: opts.intervalMs ?? 5_000 };
    },
  };
}
