/**
 * KubePrism settings and upstreams from the machine config: on when `machine.features.kubePrism.enabled` (or, in
 * the Talos 1.14 layout, a KubePrismConfig document is present), port 7445 unless set; its upstreams are the
 * cluster endpoint (port 443 when the URL names none, as upstream), `localhost:<localAPIServerPort>` on control
 * planes, and every discovered control plane member's addresses with its API server port.
 */
import type { MachineConfig } from "../config/index.js";
import { DEFAULT_KUBEPRISM_PORT } from "../generate/constants.js";
import type { MemberSpec } from "../resources/types/cluster.js";
import type { KubePrismEndpoint } from "../resources/types/k8s-status.js";

/** Upstream DefaultControlPlanePort. */
export const DEFAULT_LOCAL_APISERVER_PORT = 6443;

export function kubePrismSettings(cfg: MachineConfig): { enabled: boolean; port: number } {
  const v1 = cfg.machine?.features?.kubePrism;
  if (v1) return { enabled: v1.enabled ?? false, port: v1.port || DEFAULT_KUBEPRISM_PORT };
  const doc = cfg.document("KubePrismConfig")?.data as { enabled?: boolean; port?: number } | undefined;
  if (doc) return { enabled: doc.enabled ?? true, port: doc.port || DEFAULT_KUBEPRISM_PORT };
  return { enabled: false, port: DEFAULT_KUBEPRISM_PORT };
}

export function localAPIServerPort(cfg: MachineConfig): number {
  return cfg.cluster?.controlPlane?.localAPIServerPort || DEFAULT_LOCAL_APISERVER_PORT;
}

/** Host and port of a URL as Go's url.URL Hostname()/Port() give them (brackets dropped, "" when absent). */
function urlHostPort(endpoint: string): { host: string; port: string } | undefined {
  try {
    const u = new URL(endpoint);
    return { host: u.hostname.replace(/^\[|\]$/g, ""), port: u.port };
  } catch {
    return undefined;
  }
}

export function kubePrismEndpoints(cfg: MachineConfig, controlPlane: boolean, members: MemberSpec[]): KubePrismEndpoint[] {
  const out: KubePrismEndpoint[] = [];
  const ce = urlHostPort(cfg.endpoint() ?? "");
  if (ce) {
    const port = /^\d+$/.test(ce.port) ? Number(ce.port) : 443;
    out.push({ host: ce.host, port });
  }
  if (controlPlane) out.push({ host: "localhost", port: localAPIServerPort(cfg) });
  for (const m of members) {
    if (!m.controlPlane || (m.addresses ?? []).length === 0) continue;
    for (const addr of m.addresses) out.push({ host: addr, port: m.controlPlane.port });
  }
  return out;
}
