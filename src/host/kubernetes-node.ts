/**
 * What a machine must offer before it can run the Kubernetes node (PID 1 of the OS image; a local-mode sandbox gets
 * the same from its bind mounts, src/host/sandbox.ts):
 *  - kernel modules the CNI, kube-proxy (nftables mode) and flannel (iptables-nft, vxlan) need. The image has no
 *    modprobe, so the kernel's own request_module() finds nothing: they are loaded up front;
 *  - writable views of the folders Kubernetes writes into on the read-only root: upstream's overlays
 *    (constants.Overlays: /etc/cni, /etc/kubernetes, /usr/libexec/kubernetes, /opt) with their upper layers on
 *    EPHEMERAL (/var/system/overlays), so CNI configs, kubelet files and plugins survive a reboot, and /etc/cri on
 *    /system/overlays (tmpfs), because the CRI config is written anew at every start;
 *  - /var/run and /var/lock pointing into /run (pods and the CRI use both names);
 *  - the resolv.conf the kubelet hands to pods (upstream's /system/resolved/resolv.conf), from the node's own;
 *  - /etc/machine-id derived from the node identity (as upstream), so the kubelet's machine id survives reboots.
 * Nothing here is fatal: a step that fails is logged, and the service that needed it reports the failure.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { machineIdFromNodeId } from "../machinery/machine-id.js";
import { KUBELET_PLUGINS, MACHINE_ID, POD_RESOLV_CONF, SYSTEM_OVERLAYS, VAR_SYSTEM_OVERLAYS } from "../machinery/paths.js";
import type { LoadReport, ModuleLoader } from "./modules.js";
import { nodeMountFs, parseMountInfo, type MountFs } from "./mounts.js";
import { MNT, type Syscalls } from "./syscalls.js";

/**
 * Modules for pod networking and services: bridge + veth (the bridge CNI), vxlan (flannel), br_netfilter (bridged pod
 * traffic through netfilter), conntrack/NAT, nf_tables with the expressions kube-proxy's nftables rules use, and the
 * xtables matches/targets iptables-nft (flannel's masquerading, portmap, kube-proxy's iptables mode) maps onto
 * nft_compat. A missing one shows only as a failed rule (kube-proxy's "nftables sync failed ... No such file or
 * directory" left every Service unrouted in the VM while it worked on a host kernel that had it). Names the kernel does
 * not have (or builds in) are reported, not fatal.
 */
export const KUBERNETES_MODULES: readonly string[] = [
  "overlay",
  "bridge",
  "br_netfilter",
  "veth",
  "vxlan",
  "nf_conntrack",
  "nf_conntrack_netlink",
  "nf_nat",
  "nf_tables",
  "nft_ct",
  "nft_nat",
  "nft_chain_nat",
  "nft_masq",
  "nft_redir",
  "nft_numgen",
  "nft_hash",
  "nft_limit",
  "nft_objref",
  "nft_fib_inet",
  "nft_fib_ipv4",
  "nft_fib_ipv6",
  "nft_reject_inet",
  // kube-proxy's nftables tables are of the ip and ip6 families, whose `reject` is not nft_reject_inet's
  "nft_reject_ipv4",
  "nft_reject_ipv6",
  "nft_compat",
  "xt_comment",
  "xt_mark",
  "xt_conntrack",
  "xt_MASQUERADE",
  "xt_addrtype",
  "xt_nat",
  "xt_multiport",
  "xt_statistic",
  "xt_physdev",
  "xt_tcpudp",
  "ipt_REJECT",
  "ip6t_REJECT",
  "ip_tables",
  "iptable_nat",
  "iptable_filter",
  "iptable_mangle",
  "ip6_tables",
  "ip6table_nat",
  "ip6table_filter",
  "ip6table_mangle",
];

/** Upstream's constants.Overlays: upper layers on EPHEMERAL. */
export const EPHEMERAL_OVERLAYS: readonly string[] = ["/etc/cni", "/etc/kubernetes", KUBELET_PLUGINS, "/opt"];
/** Written anew at every start: upper layers on the /system tmpfs. */
export const SYSTEM_TMP_OVERLAYS: readonly string[] = ["/etc/cri"];

export interface KubernetesNodeOptions {
  sys: Pick<Syscalls, "mount" | "umount">;
  modules?: Pick<ModuleLoader, "load">;
  /** The agent's state folder, where node-identity.yaml lives (machine-id); none: machine-id left alone. */
  stateDir?: string;
  /** Root the paths are taken under (tests); "/" on a machine. */
  root?: string;
  fs?: MountFs;
  log?: (msg: string) => void;
}

export interface PreparedNode {
  modules?: LoadReport;
  /** Overlay targets mounted (or found mounted), in mount order. */
  overlays: string[];
  /** What could not be done, one line each. */
  problems: string[];
  /** Unmounts the overlays this call mounted (before /var goes away at shutdown). */
  unmount(): void;
}

/** `/etc/cni` → `etc-cni`: upstream's naming of the upper and work folders. */
export function overlayName(target: string): string {
  return target.replace(/^\/+/, "").replaceAll("/", "-");
}

export function prepareKubernetesNode(o: KubernetesNodeOptions): PreparedNode {
  const root = o.root ?? "/";
  const at = (p: string) => (root === "/" ? p : join(root, p));
  const fs = o.fs ?? nodeMountFs;
  const log = o.log ?? (() => {});
  const problems: string[] = [];
  const mounted: string[] = [];
  const overlays: string[] = [];

  let modules: LoadReport | undefined;
  if (o.modules) {
    modules = o.modules.load([...KUBERNETES_MODULES]);
    if (modules.failed.length) problems.push(`modules: ${modules.failed.map((f) => `${f.name} (${f.error})`).join(", ")}`);
  }

  const info = () => parseMountInfo(fs.readMountInfo() ?? "");
  const overlay = (target: string, base: string) => {
    const dst = at(target);
    if (info().findLast((m) => m.mountPoint === dst)?.fstype === "overlay") {
      overlays.push(target);
      return;
    }
    const upper = at(join(base, `${overlayName(target)}-diff`));
    const work = at(join(base, `${overlayName(target)}-workdir`));
    try {
      if (!existsSync(dst)) throw new Error(`${dst} does not exist in the root filesystem`);
      fs.mkdirp(upper, 0o755);
      fs.mkdirp(work, 0o755);
      o.sys.mount("overlay", dst, "overlay", 0, `lowerdir=${dst},upperdir=${upper},workdir=${work}`);
      mounted.push(dst);
      overlays.push(target);
    } catch (err) {
      problems.push(`overlay on ${target}: ${(err as Error).message}`);
    }
  };
  for (const t of EPHEMERAL_OVERLAYS) overlay(t, VAR_SYSTEM_OVERLAYS);
  for (const t of SYSTEM_TMP_OVERLAYS) overlay(t, SYSTEM_OVERLAYS);

  for (const [name, target] of [["run", "/run"], ["lock", "/run/lock"]] as const) {
    const p = at(join("/var", name));
    try {
      if (!isPresent(p)) {
        mkdirSync(dirname(p), { recursive: true });
        symlinkSync(target, p);
      }
    } catch (err) {
      problems.push(`/var/${name} → ${target}: ${(err as Error).message}`);
    }
  }
  mkdirSync(at("/run/lock"), { recursive: true });

  try {
    const resolv = readFileSync(at("/etc/resolv.conf"), "utf8");
    mkdirSync(dirname(at(POD_RESOLV_CONF)), { recursive: true });
    writeFileSync(at(POD_RESOLV_CONF), resolv, { mode: 0o644 });
    if (!/^\s*nameserver\s/m.test(resolv)) problems.push(`${POD_RESOLV_CONF}: the node has no nameserver (pods cannot resolve outside names)`);
  } catch (err) {
    problems.push(`${POD_RESOLV_CONF}: ${(err as Error).message}`);
  }

  if (o.stateDir) {
    const identity = join(o.stateDir, "node-identity.yaml");
    try {
      const nodeId = existsSync(identity) ? /^nodeId:\s*(\S+)/m.exec(readFileSync(identity, "utf8"))?.[1] : undefined;
      // Written through the link the image has (/etc/machine-id → /system/etc/machine-id).
      if (nodeId) writeFileSync(at(MACHINE_ID), `${machineIdFromNodeId(nodeId)}\n`, { mode: 0o444 });
    } catch (err) {
      problems.push(`${MACHINE_ID}: ${(err as Error).message}`);
    }
  }

  const loaded = modules ? `${modules.loaded.length} modules loaded, ${modules.present.length} present` : "no modules";
  log(`kubernetes node: ${loaded}; overlays ${overlays.join(" ") || "none"}${problems.length ? `; problems: ${problems.join("; ")}` : ""}`);
  return {
    modules,
    overlays,
    problems,
    unmount() {
      for (const dst of mounted.reverse()) {
        try {
          o.sys.umount(dst);
        } catch {
          try {
            o.sys.umount(dst, MNT.DETACH);
          } catch {
            // left to the final sync
          }
        }
      }
      mounted.length = 0;
    },
  };
}

function isPresent(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}
