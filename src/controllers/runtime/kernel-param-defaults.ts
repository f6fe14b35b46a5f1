/**
 * runtime.KernelParamDefaultsController: the kernel parameters machined sets on every node (upstream's defaults:
 * forwarding, ICMP hardening, keepalives, pid_max, inotify and aio limits) plus the ones the kubelet checks before it
 * runs (vm.overcommit_memory, kernel.panic, ...), as KernelParamDefaultSpecs.
 */
import { KernelParamDefaultSpecType, kernelParamId, KUBELET_KERNEL_DEFAULTS } from "../../machinery/resources/types/kernel.js";
import type { Controller } from "../../state/runtime/index.js";

const DEFAULTS: Record<string, string> = {
  "net.ipv4.ip_forward": "1",
  "net.ipv4.icmp_ignore_bogus_error_responses": "1",
  "net.ipv4.icmp_echo_ignore_broadcasts": "1",
  // apid and trustd ports, so no outgoing connection takes them
  "net.ipv4.ip_local_reserved_ports": "50000,50001",
  "net.ipv6.conf.default.forwarding": "1",
  "net.ipv6.conf.default.accept_ra": "2",
  "net.ipv4.tcp_keepalive_time": "600",
  "net.ipv4.tcp_keepalive_intvl": "60",
  "kernel.pid_max": "262144",
  "fs.inotify.max_user_instances": "8192",
  "fs.aio-max-nr": "1048576",
  ...KUBELET_KERNEL_DEFAULTS,
};

/** Only where the bridge module is loaded (upstream sets them when br_netfilter is present). */
const BRIDGE: Record<string, string> = {
  "net.bridge.bridge-nf-call-iptables": "1",
  "net.bridge.bridge-nf-call-ip6tables": "1",
};

export function kernelParamDefaultsController(opts: { bridgeNetfilter?: () => boolean } = {}): Controller {
  return {
    name: "runtime.KernelParamDefaultsController",
    inputs: [],
    outputs: [{ type: KernelParamDefaultSpecType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const all = { ...DEFAULTS, ...(opts.bridgeNetfilter?.() ? BRIDGE : {}) };
      for (const [key, value] of Object.entries(all)) {
        ctx.apply({ namespace: "runtime", type: KernelParamDefaultSpecType.type, id: kernelParamId(key), spec: { value, ignoreErrors: true } });
      }
      ctx.cleanup("runtime", KernelParamDefaultSpecType.type, Object.keys(all).map(kernelParamId));
    },
  };
}
