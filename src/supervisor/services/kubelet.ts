/**
 * The kubelet service, as upstream runs it: the kubelet image as a container in the CRI containerd's `system`
 * namespace, host network and PID namespace, privileged, rootfs propagation shared, with upstream's bind mounts
 * (the kubelet's own folder rshared, so volumes it mounts reach containerd). Before each start it writes what the
 * kubelet reads (bootstrap kubeconfig, CA, KubeletConfiguration), throws away a client certificate that no longer
 * matches the node name, and pulls the image.
 *
 * In a local-mode sandbox the kernel is the host's: the sysctls the kubelet checks are shown to it from files (bind
 * mounts inside its container), so it neither refuses to start nor changes the host.
 */
import { join } from "node:path";
import { hostFiles, writeFileAtomic, type Files } from "../../host/files/index.js";
import { ensureOwnedDir } from "../../host/owned-file.js";
import { ensureSharedMount } from "../../host/mounts.js";
import { kubeletClientCertProblem } from "../../machinery/kubernetes/kubelet-client-cert.js";
import type { Syscalls } from "../../host/syscalls.js";
import { ContainerdRunner, type Mount } from "../runners/containerd.js";
import { ensureImage, type Ctr, type ImageSource } from "../ctr.js";
import { ServiceState, type Condition, type HealthSettings, type RestartSettings, type Runner, type Service, type StepContext } from "../types.js";

/** What the kubelet is started with, from KubeletSpec and KubeletSecrets. */
export interface KubeletRun {
  image: string;
  args: string[];
  extraMounts: Mount[];
  /** The KubeletConfiguration document, YAML text (written to /etc/kubernetes/kubelet.yaml). */
  configYaml: string;
  /** The bootstrap kubeconfig, YAML text; absent with skipNodeRegistration. */
  bootstrapKubeconfig?: string;
  /** PEM of the CAs the kubelet trusts for clients (/etc/kubernetes/pki/ca.crt). */
  caPem: string;
  /** The node name the client certificate must carry; "" when the user names the node. */
  expectedNodename: string;
  /** The API server the kubelet talks to, rewritten into an existing kubeconfig-kubelet. */
  endpoint: string;
}

export interface KubeletServiceOptions {
  run: KubeletRun;
  ctr: Ctr;
  namespace?: string;
  source?: ImageSource;
  /** Root under which the files are written (tests); the container sees the same paths. Default "/". */
  root?: string;
  files?: Files;
  /** Make /var/lib/kubelet a shared mount before the kubelet starts (on a node that owns its mounts). */
  sharedKubeletDir?: { sys: Pick<Syscalls, "mount"> };
  /** The container's cgroup (upstream: /podruntime/kubelet). */
  cgroup?: string;
  /** Sandbox: sysctl values shown to the kubelet instead of the host's (key → value). */
  fakeSysctls?: Record<string, string>;
  healthUrl?: string;
  dependsOn?: string[];
  conditions?: Condition[];
  health?: Partial<HealthSettings>;
  restart?: Partial<RestartSettings>;
  gracefulStopMs?: number;
}

/** Read-only host files and folders the kubelet expects; bound only where they exist. */
const HOST_RO: [src: string, dst: string][] = [
  ["/usr/lib/modules", "/lib/modules"],
  ["/etc/machine-id", "/etc/machine-id"],
  ["/etc/os-release", "/etc/os-release"],
  ["/etc/nfsmount.conf", "/etc/nfsmount.conf"],
  ["/etc/resolv.conf", "/etc/resolv.conf"],
  // KubeletConfiguration.resolvConf on a machine (upstream's path); a sandbox points the kubelet at /etc/resolv.conf.
  ["/system/resolved/resolv.conf", "/system/resolved/resolv.conf"],
  ["/etc/cni", "/etc/cni"],
  ["/opt/cni/bin", "/opt/cni/bin"],
];

export class KubeletService implements Service {
  readonly id = "kubelet";
  readonly api = { start: true, restart: true };
  private readonly files: Files;
  private readonly root: string;

  constructor(private readonly o: KubeletServiceOptions) {
    this.files = o.files ?? hostFiles;
    this.root = o.root ?? "/";
  }

  dependsOn(): string[] {
    return this.o.dependsOn ?? ["cri"];
  }

  conditions(): Condition[] {
    return this.o.conditions ?? [];
  }

  restart(): Partial<RestartSettings> {
    return { policy: "forever", ...this.o.restart };
  }

  private at(p: string): string {
    return this.root === "/" ? p : join(this.root, p);
  }

  /** HOST_RO entries present on this node, found in pre() (runc refuses a bind mount of a missing path). */
  private hostReadOnly: [string, string][] = [];

  async pre(ctx: StepContext): Promise<void> {
    const f = this.files;
    const r = this.o.run;
    this.hostReadOnly = [];
    for (const [src, dst] of HOST_RO) if (await f.exists(this.at(src))) this.hostReadOnly.push([src, dst]);
    for (const d of ["/etc/kubernetes/pki", "/var/lib/kubelet/seccomp", "/var/log/pods", "/var/log/containers", "/etc/cni/net.d", "/usr/libexec/kubernetes"]) {
      await f.mkdir(this.at(d), { recursive: true });
    }
    // Upstream's system volumes the kubelet's pods use: the API server (uid 65534) writes its audit log here.
    await ensureOwnedDir(this.at("/var/log/audit"), 0o700);
    await ensureOwnedDir(this.at("/var/log/audit/kube"), 0o700, { uid: 65534, gid: 65534 });
    for (const m of r.extraMounts) await f.mkdir(m.src, { recursive: true, mode: 0o700 });
    // Pod volumes the kubelet mounts inside its container must reach containerd in the node's namespace.
    if (this.o.sharedKubeletDir) ensureSharedMount(this.o.sharedKubeletDir.sys, this.at("/var/lib/kubelet"));
    if (r.bootstrapKubeconfig) await writeFileAtomic(f, this.at("/etc/kubernetes/bootstrap-kubeconfig"), r.bootstrapKubeconfig, 0o600);
    await writeFileAtomic(f, this.at("/etc/kubernetes/pki/ca.crt"), r.caPem, 0o400);
    await writeFileAtomic(f, this.at("/etc/kubernetes/kubelet.yaml"), r.configYaml, 0o600);
    await this.dropStaleClientCert(ctx);
    // The serving certificate is self-signed by the kubelet; a new one is made for the (possibly new) names.
    for (const n of ["kubelet.crt", "kubelet.key"]) await f.rm(this.at(`/var/lib/kubelet/pki/${n}`), { force: true });
    await this.pointKubeconfigAt(r.endpoint);
    if (this.o.fakeSysctls) {
      const dir = this.at("/run/machined/kubelet-sysctls");
      await f.mkdir(dir, { recursive: true });
      for (const [k, v] of Object.entries(this.o.fakeSysctls)) await f.writeFile(join(dir, k), `${v}\n`);
    }
    ctx.event(ServiceState.Preparing, `Pulling image ${r.image}`);
    await ensureImage(this.o.ctr, this.o.namespace ?? "system", r.image, this.o.source, ctx.signal);
  }

  /**
   * A client certificate for another node name or from a CA the cluster no longer accepts cannot be renewed: start
   * over with TLS bootstrap (upstream checks both before every start).
   */
  private async dropStaleClientCert(ctx: StepContext): Promise<void> {
    const pem = await this.files.readFile(this.at("/var/lib/kubelet/pki/kubelet-client-current.pem"), "utf8").catch(() => undefined);
    if (!pem) return;
    const problem = kubeletClientCertProblem(pem, this.o.run.expectedNodename, this.o.run.caPem);
    if (!problem) return;
    ctx.event(ServiceState.Preparing, `removing the kubelet client certificate: ${problem}`);
    await this.files.rm(this.at("/var/lib/kubelet/pki"), { recursive: true, force: true });
    await this.files.rm(this.at("/etc/kubernetes/kubeconfig-kubelet"), { force: true });
  }

  /** An existing kubeconfig-kubelet keeps its credentials but follows the API server endpoint. */
  private async pointKubeconfigAt(endpoint: string): Promise<void> {
    const path = this.at("/etc/kubernetes/kubeconfig-kubelet");
    const text = await this.files.readFile(path, "utf8").catch(() => undefined);
    if (!text || !endpoint) return;
    const next = text.replace(/^(\s*server:\s*).*$/m, `$1${endpoint}`);
    if (next !== text) await writeFileAtomic(this.files, path, next, 0o600);
  }

  mounts(): Mount[] {
    const m: Mount[] = [
      { src: "/dev", dst: "/dev", options: ["rbind", "rw"] },
      { src: "/sys/fs/cgroup", dst: "/sys/fs/cgroup", options: ["rbind", "rw"] },
      { src: "/etc/kubernetes", dst: "/etc/kubernetes", options: ["rbind", "rw"] },
      { src: "/usr/libexec/kubernetes", dst: "/usr/libexec/kubernetes", options: ["rbind", "rw"] },
      { src: "/run", dst: "/run", options: ["rbind", "rslave"] },
      { src: "/var/lib/containerd", dst: "/var/lib/containerd", options: ["rbind", "rslave"] },
      { src: "/var/lib/kubelet", dst: "/var/lib/kubelet", options: ["rbind", "rshared"] },
      { src: "/var/log/containers", dst: "/var/log/containers", options: ["rbind", "rw"] },
      { src: "/var/log/pods", dst: "/var/log/pods", options: ["rbind", "rw"] },
    ];
    for (const [src, dst] of this.hostReadOnly) m.push({ src, dst, options: ["rbind", "ro"] });
    return [...m, ...this.o.run.extraMounts];
  }

  runner(): Runner {
    const r = this.o.run;
    let args = ["/usr/local/bin/kubelet", ...r.args];
    if (this.o.fakeSysctls) {
      // Inside the container: each checked sysctl shows the value machined would set, from a file.
      const keys = Object.keys(this.o.fakeSysctls);
      const binds = keys.map((k) => `mount --bind /run/machined/kubelet-sysctls/${k} /proc/sys/${k.replace(/\./g, "/")}`).join(" && ");
      args = ["/bin/sh", "-c", `${binds} && exec "$@"`, "kubelet", ...args];
    }
    return new ContainerdRunner({
      address: this.o.ctr.address,
      namespace: this.o.namespace ?? "system",
      containerId: this.id,
      image: r.image,
      args,
      mounts: this.mounts(),
      netHost: true,
      privileged: true,
      rootfsPropagation: "shared",
      cgroup: this.o.cgroup,
      // Host PID namespace, as upstream (the kubelet inspects host processes); this process's is the host's.
      withNs: [`pid:/proc/${process.pid}/ns/pid`],
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
