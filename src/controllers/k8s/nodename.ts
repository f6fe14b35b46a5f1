/**
 * k8s.NodenameController: the Kubernetes node name (`k8s`/`nodename`), derived from the hostname —
 * HostnameStatus once the network controllers publish it, else the configured or OS hostname —
 * lower-cased and stripped of characters a node name cannot hold; the FQDN with registerWithFQDN.
 */
import type { MachineConfig } from "../../machinery/config/index.js";
import { K8S_NS, NodenameType } from "../../machinery/resources/types/k8s.js";
import type { Controller } from "../../state/runtime/index.js";
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { fqdn, HOSTNAME_ID, HostnameStatusType } from "../../machinery/resources/types/network.js";
import { pointer, read } from "../../machinery/resources/read.js";


export interface NodenameOptions {
  /** Used until a HostnameStatus exists; default: machine.network.hostname (nothing is published without either). */
  fallbackHostname?: (cfg: MachineConfig) => string | undefined;
}

export function nodenameController(opts: NodenameOptions = {}): Controller {
  const fallback = opts.fallbackHostname ?? ((cfg: MachineConfig) => cfg.hostname());
  return {
    name: "k8s.NodenameController",
    inputs: [machineConfigInput, { ...pointer(HostnameStatusType, HOSTNAME_ID), kind: "weak" }],
    outputs: [{ type: NodenameType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      // Like upstream, keep the last node name while there is no config (maintenance mode).
      if (!cfg?.machine) return;
      const status = read(ctx, HostnameStatusType, HOSTNAME_ID);
      const hs = status?.spec;
      const kubelet = cfg.machine.kubelet;
      const hostname = hs ? (kubelet?.registerWithFQDN ? fqdn(hs) : hs.hostname) : fallback(cfg);
      if (!hostname) return; // no name yet: the network controllers publish HostnameStatus shortly
      ctx.apply({
        namespace: K8S_NS,
        type: NodenameType.type,
        id: "nodename",
        spec: {
          nodename: nodenameFromHostname(hostname),
          hostnameVersion: status ? String(status.metadata.version) : "",
          skipNodeRegistration: kubelet?.skipNodeRegistration ?? false,
        },
      });
    },
  };
}

/** Lower-case letters, digits, `-` (also for `_`) and `.`; everything else dropped; no leading/trailing `-`/`.`. */
export function nodenameFromHostname(hostname: string): string {
  let out = "";
  for (const ch of hostname) {
    if (/[a-z0-9.]/.test(ch)) out += ch;
    else if (/[A-Z]/.test(ch)) out += ch.toLowerCase();
    else if (ch === "-" || ch === "_") out += "-";
  }
  out = out.replace(/^[-.]+|[-.]+$/g, "");
  if (out === "") throw new Error(`could not convert hostname ${JSON.stringify(hostname)} to a valid Kubernetes Node name`);
  return out;
}
