/**
 * k8s.KubePrismController: runs KubePrism, the node-local TCP load balancer to the API servers, as
 * KubePrismConfig says (listen address, upstreams), and publishes KubePrismStatuses `k8s`/`k8s-loadbalancer`
 * (its address and whether any upstream is healthy, looked at every 5 s). A new listen address restarts it;
 * new upstreams are handed to the running one (upstreams it keeps keep their health). No config: stopped.
 * It runs only where this node runs Kubernetes (a KubeletConfig exists), so a host in plain local mode keeps
 * its own loopback port.
 */
import { joinHostPort, startTcpBalancer, type LoadBalancer, type LoadBalancerFactory, type LoadBalancerOptions } from "../../host/tcp-balancer.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";
import { K8S_NS, KubeletConfigType } from "../../machinery/resources/types/k8s.js";
import {
  KUBEPRISM_CONFIG_ID,
  KUBEPRISM_STATUSES_ID,
  KubePrismConfigType,
  KubePrismStatusesType,
  type KubePrismConfigSpec,
} from "../../machinery/resources/types/k8s-status.js";
import type { Controller } from "../../state/runtime/index.js";

/** Upstream's KubePrism constants (pkg/machinery/constants). */
export const KUBEPRISM_TIMING: Omit<LoadBalancerOptions, "host" | "port"> = {
  dialTimeoutMs: 15_000,
  keepAliveMs: 30_000,
  healthIntervalMs: 20_000,
  healthTimeoutMs: 15_000,
};

export interface KubePrismOptions {
  balancer?: LoadBalancerFactory;
  timing?: Omit<LoadBalancerOptions, "host" | "port">;
  /** How often the status is refreshed (default 5 s). */
  statusIntervalMs?: number;
}

const upstreams = (spec: KubePrismConfigSpec) => spec.endpoints.map((e) => joinHostPort(e.host, e.port));

export function kubePrismController(opts: KubePrismOptions = {}): Controller {
  const start = opts.balancer ?? startTcpBalancer;
  const interval = opts.statusIntervalMs ?? 5_000;
  let lb: { balancer: LoadBalancer; host: string; port: number } | undefined;
  let stopHooked = false;
  const stop = async () => {
    const cur = lb;
    lb = undefined;
    await cur?.balancer.close();
  };
  return {
    name: "k8s.KubePrismController",
    inputs: [
      { ...pointer(KubePrismConfigType, KUBEPRISM_CONFIG_ID), kind: "weak" },
      { ...pointer(KubeletConfigType, "kubelet"), kind: "weak" },
    ],
    outputs: [{ type: KubePrismStatusesType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      if (!stopHooked) {
        stopHooked = true;
        ctx.signal.addEventListener("abort", () => void stop(), { once: true });
      }
      const cfg = readSpec(ctx, KubeletConfigType, "kubelet") ? readSpec(ctx, KubePrismConfigType, KUBEPRISM_CONFIG_ID) : undefined;
      if (lb && (!cfg || cfg.host !== lb.host || cfg.port !== lb.port)) {
        await stop();
        ctx.log("KubePrism is disabled");
      }
      if (cfg && !lb) {
        const balancer = await start({ ...KUBEPRISM_TIMING, ...opts.timing, host: cfg.host, port: cfg.port });
        if (ctx.signal.aborted) {
          await balancer.close();
          return;
        }
        lb = { balancer, host: cfg.host, port: cfg.port };
        ctx.log("KubePrism is enabled", { endpoint: balancer.endpoint });
      }
      if (!lb || !cfg) {
        ctx.cleanup(K8S_NS, KubePrismStatusesType.type, []);
        return;
      }
      lb.balancer.setUpstreams(upstreams(cfg));
      ctx.apply({ ...pointer(KubePrismStatusesType, KUBEPRISM_STATUSES_ID), spec: { host: lb.balancer.endpoint, healthy: lb.balancer.healthy() } });
      ctx.cleanup(K8S_NS, KubePrismStatusesType.type, [KUBEPRISM_STATUSES_ID]);
      return { requeueAfterMs: interval };
    },
  };
}
