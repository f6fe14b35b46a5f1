/**
 * The kubelet service: the kubelet image run as a containerd task in the `system` namespace with host
 * networking, privileges and the upstream bind mounts. In local mode the kubelet's writable folders
 * live under a host root inside the state folder instead of the real /var/lib/kubelet.
 */
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { ContainerdRunner, type Mount } from "../runners/containerd.js";
import type { Condition, HealthSettings, RestartSettings, Runner, Service } from "../types.js";

/** Flags the agent owns; extra args may not override them (upstream merge policy). */
const DENIED = ["bootstrap-kubeconfig", "kubeconfig", "container-runtime", "container-runtime-endpoint", "config", "cert-dir"];

export interface KubeletArgsInput {
  nodename: string;
  nodeIps?: string[];
  skipNodeRegistration?: boolean;
  cloudProviderExternal?: boolean;
  /** Only for kubelets too old to take the endpoint from their config file. */
  containerRuntimeEndpoint?: string;
  extraArgs?: Record<string, string>;
}

/** Kubelet flags as upstream's KubeletSpec controller derives them, sorted like argsbuilder output. */
export function kubeletArgs(i: KubeletArgsInput): string[] {
  const a: Record<string, string> = {
    config: "/etc/kubernetes/kubelet.yaml",
    "cert-dir": "/var/lib/kubelet/pki",
    "hostname-override": i.nodename,
  };
  if (!i.skipNodeRegistration) {
    a["bootstrap-kubeconfig"] = "/etc/kubernetes/bootstrap-kubeconfig";
    a.kubeconfig = "/etc/kubernetes/kubeconfig-kubelet";
  }
  if (i.cloudProviderExternal) a["cloud-provider"] = "external";
  if (i.containerRuntimeEndpoint) a["container-runtime-endpoint"] = i.containerRuntimeEndpoint;
  const extra = i.extraArgs ?? {};
  if ("hostname-override" in extra) delete a["hostname-override"];
  if (!("node-ip" in extra) && i.nodeIps?.length) a["node-ip"] = i.nodeIps.join(",");
  for (const [k, v] of Object.entries(extra)) {
    if (DENIED.includes(k)) throw new Error(`extra argument ${JSON.stringify(k)} is not allowed`);
    a[k] = v;
  }
  return Object.keys(a)
    .sort()
    .map((k) => `--${k}=${a[k]}`);
}

/** Writable kubelet folders (created under hostRoot in local mode). */
const WRITABLE = ["/etc/kubernetes", "/var/lib/kubelet", "/var/log/pods", "/var/log/containers"];
/** Read-only host files/folders the kubelet expects; bound only where they exist on this host. */
const HOST_RO: [src: string, dst: string][] = [
  ["/usr/lib/modules", "/lib/modules"],
  ["/etc/machine-id", "/etc/machine-id"],
  ["/etc/os-release", "/etc/os-release"],
  ["/etc/nfsmount.conf", "/etc/nfsmount.conf"],
];

export interface KubeletServiceOptions {
  /** containerd socket the kubelet task runs on (and talks CRI to). */
  address: string;
  namespace?: string;
  image: string | (() => string);
  args: string[] | (() => string[]);
  /** Local mode: root for the kubelet's writable folders; omit in the image (real paths). */
  hostRoot?: string;
  extraMounts?: Mount[];
  binary?: string;
  /** Share the host PID namespace (upstream does); default true. */
  hostPid?: boolean;
  healthUrl?: string;
  dependsOn?: string[];
  conditions?: Condition[];
  health?: Partial<HealthSettings>;
  restart?: Partial<RestartSettings>;
  gracefulStopMs?: number;
}

export class KubeletService implements Service {
  readonly id = "kubelet";
  readonly api = { start: true, restart: true };

  constructor(private readonly o: KubeletServiceOptions) {}

  dependsOn(): string[] {
    return this.o.dependsOn ?? ["containerd"];
  }

  conditions(): Condition[] {
    return this.o.conditions ?? [];
  }

  restart(): Partial<RestartSettings> {
    return { policy: "forever", ...this.o.restart };
  }

  /** Host path backing a kubelet folder. */
  hostPath(p: string): string {
    return this.o.hostRoot ? join(this.o.hostRoot, p) : p;
  }

  async pre(): Promise<void> {
    for (const d of WRITABLE) mkdirSync(this.hostPath(d), { recursive: true });
    for (const m of this.o.extraMounts ?? []) mkdirSync(m.src, { recursive: true, mode: 0o700 });
  }

  mounts(): Mount[] {
    const m: Mount[] = [
      { src: "/dev", dst: "/dev", options: ["rbind", "rw"] },
      { src: this.hostPath("/etc/kubernetes"), dst: "/etc/kubernetes", options: ["rbind", "rw"] },
      { src: this.hostPath("/var/lib/kubelet"), dst: "/var/lib/kubelet", options: ["rbind", "rw"] },
      { src: this.hostPath("/var/log/pods"), dst: "/var/log/pods", options: ["rbind", "rw"] },
      { src: this.hostPath("/var/log/containers"), dst: "/var/log/containers", options: ["rbind", "rw"] },
      // The CRI socket at the path kubelet configs name.
      { src: dirname(this.o.address), dst: "/run/containerd", options: ["rbind", "rw"] },
    ];
    for (const [src, dst] of HOST_RO) if (existsSync(src)) m.push({ src, dst, options: ["rbind", "ro"] });
    return [...m, ...(this.o.extraMounts ?? [])];
  }

  runner(): Runner {
    const image = typeof this.o.image === "function" ? this.o.image() : this.o.image;
    const args = typeof this.o.args === "function" ? this.o.args() : this.o.args;
    return new ContainerdRunner({
      address: this.o.address,
      namespace: this.o.namespace ?? "system",
      containerId: this.id,
      image,
      args: [this.o.binary ?? "/usr/local/bin/kubelet", ...args],
      mounts: this.mounts(),
      netHost: true,
      privileged: true,
      // Host PID namespace, as upstream (the kubelet inspects host processes). The agent's own namespace
      // is the host's; /proc/1 may not be readable when the agent is not PID 1.
      withNs: this.o.hostPid === false ? [] : [`pid:/proc/${process.pid}/ns/pid`],
      gracefulStopMs: this.o.gracefulStopMs,
    });
  }

  health() {
    const url = this.o.healthUrl ?? "http://127.0.0.1:10248/healthz";
    return {
      check: async (signal: AbortSignal) => {
        const res = await fetch(url, { signal });
        if (res.status !== 200) throw new Error(`expected status code 200, got ${res.status}`);
      },
      // Upstream: defaults with a 2 s initial delay (kubelet is slow to start).
      settings: { initialDelayMs: 2000, periodMs: 5000, timeoutMs: 500, ...this.o.health },
    };
  }
}
