/**
 * Kernel parameters under /proc/sys. Which ones belong to the network namespace (and may be changed by a node that
 * has one of its own, the local-mode sandbox) and which are the whole host's.
 */
import { join } from "node:path";
import { hostFiles, type Files } from "./files/index.js";

export interface Sysctls {
  read(key: string): Promise<string | undefined>;
  write(key: string, value: string): Promise<void>;
}

/** `net.ipv4.ip_forward` → /proc/sys/net/ipv4/ip_forward (under `root`, for tests). */
export function sysctlPath(key: string, root = "/"): string {
  return join(root, "proc/sys", key.replace(/\./g, "/"));
}

export function hostSysctls(files: Files = hostFiles, root = "/"): Sysctls {
  return {
    read: async (key) => (await files.readFile(sysctlPath(key, root), "utf8").catch(() => undefined))?.trim(),
    write: (key, value) => files.writeFile(sysctlPath(key, root), `${value}\n`),
  };
}

/**
 * Keys the kernel keeps per network namespace (so a sandboxed node may set them without touching the host): the
 * per-interface settings, forwarding, the ICMP/keepalive/local-port knobs and the bridge netfilter switches (5.3+).
 */
const NETNS_KEYS = [/^net\.ipv4\.conf\./, /^net\.ipv6\.conf\./, /^net\.ipv4\.ip_forward$/, /^net\.ipv4\.tcp_keepalive_/, /^net\.ipv4\.icmp_/, /^net\.ipv4\.ip_local_/, /^net\.bridge\./];

export function isNetnsSysctl(key: string): boolean {
  return NETNS_KEYS.some((r) => r.test(key));
}
