/**
 * k8s.KubeletSpecController: what the kubelet service actually runs — image, flags, extra mounts,
 * expected node name and the KubeletConfiguration document — from KubeletConfig + Nodename +
 * MachineType (+ node IPs). Waits (publishes nothing) until all three inputs exist.
 */
import type { MachineTypeName } from "../../machinery/resources/types/config.js";
import {
  K8S_NS,
  KubeletConfigType,
  KubeletSpecType,
  NodenameType,
  type KubeletConfigSpec,
} from "../../machinery/resources/types/k8s.js";
import { NodeIPType } from "../../machinery/resources/types/k8s-status.js";
import type { Controller, ReconcileContext } from "../../state/runtime/index.js";
import { machineType, machineTypeInput } from "../../machinery/resources/types/config.js";
import { NETWORK_NS, NODE_ADDRESS, NodeAddressType, nodeAddressIPs } from "../../machinery/resources/types/network.js";
import { readSpec } from "../../machinery/resources/read.js";
import { args, mergeArgs, renderArgs, type Args } from "../../machinery/kubernetes/args.js";
import { KUBELET_ID } from "./kubelet-config.js";
import { kubeletConfiguration, type KubeletConfigurationOptions } from "../../machinery/kubernetes/kubelet-configuration.js";

export interface KubeletSpecOptions {
  /** Container mode: the kubelet must not insist on protecting kernel defaults. */
  container?: boolean;
  /** What this host needs in the KubeletConfiguration (cgroup v1, the sandbox's cgroup folder, resolv.conf). */
  host?: KubeletConfigurationOptions["host"];
}

export function kubeletSpecController(opts: KubeletSpecOptions = {}): Controller {
  const ptr = { namespace: K8S_NS, type: KubeletSpecType.type, id: KUBELET_ID };
  return {
    name: "k8s.KubeletSpecController",
    inputs: [
      { namespace: K8S_NS, type: KubeletConfigType.type, id: KUBELET_ID, kind: "weak" },
      { namespace: K8S_NS, type: NodenameType.type, id: "nodename", kind: "weak" },
      { namespace: K8S_NS, type: NodeIPType.type, id: KUBELET_ID, kind: "weak" },
      { namespace: NETWORK_NS, type: NodeAddressType.type, kind: "weak" },
      machineTypeInput,
    ],
    outputs: [{ type: KubeletSpecType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = readSpec(ctx, KubeletConfigType, KUBELET_ID);
      if (!cfg) {
        ctx.destroy(ptr);
        return;
      }
      const mt = machineType(ctx);
      const nodename = readSpec(ctx, NodenameType, "nodename");
      if (!mt || !nodename) return; // Upstream also waits for these instead of publishing a partial spec.
      ctx.apply({ ...ptr, spec: kubeletSpec(cfg, mt, nodename.nodename, nodeIPs(ctx), opts) });
    },
  };
}

export function kubeletSpec(cfg: KubeletConfigSpec, mt: MachineTypeName, nodename: string, ips: string[], opts: KubeletSpecOptions = {}) {
  let expectedNodename = nodename;
  const a: Args = args({
    config: "/etc/kubernetes/kubelet.yaml",
    "cert-dir": "/var/lib/kubelet/pki",
    "hostname-override": nodename,
  });
  if (!cfg.skipNodeRegistration) {
    a.set("bootstrap-kubeconfig", ["/etc/kubernetes/bootstrap-kubeconfig"]);
    a.set("kubeconfig", ["/etc/kubernetes/kubeconfig-kubelet"]);
  }
  if (cfg.cloudProviderExternal) a.set("cloud-provider", ["external"]);
  const extra: Args = new Map(Object.entries(cfg.extraArgs ?? {}).map(([k, v]) => [k, [...v.values]]));
  // The user picks the node name themselves: nothing to expect.
  if (extra.has("hostname-override")) expectedNodename = "";
  if (!extra.has("node-ip") && ips.length > 0) a.set("node-ip", [ips.join(",")]);
  const denied = ["bootstrap-kubeconfig", "kubeconfig", "container-runtime", "container-runtime-endpoint", "config", "cert-dir"];
  mergeArgs(a, extra, Object.fromEntries(denied.map((k) => [k, "denied" as const])));
  if (cfg.credentialProviderConfig) {
    a.set("image-credential-provider-bin-dir", ["/usr/local/lib/kubelet/credentialproviders"]);
    a.set("image-credential-provider-config", ["/etc/kubernetes/kubelet-credentialproviderconfig.yaml"]);
  }
  return {
    image: cfg.image,
    args: renderArgs(a),
    extraMounts: cfg.extraMounts ?? [],
    expectedNodename,
    config: kubeletConfiguration(cfg, mt, { container: opts.container, host: opts.host }),
    credentialProviderConfig: cfg.credentialProviderConfig,
  };
}

/** Node IPs: upstream's NodeIP resource when present, else the first routed IPv4 and IPv6 address. */
function nodeIPs(ctx: ReconcileContext): string[] {
  const nodeIP = readSpec(ctx, NodeIPType, KUBELET_ID);
  if (nodeIP?.addresses?.length) return [...nodeIP.addresses];
  const addrs = nodeAddressIPs(readSpec(ctx, NodeAddressType, NODE_ADDRESS.routedNoK8s));
  const v4 = addrs.find((a) => !a.includes(":"));
  const v6 = addrs.find((a) => a.includes(":"));
  return [v4, v6].filter((a): a is string => a !== undefined);
}
