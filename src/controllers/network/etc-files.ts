/**
 * network.EtcFileController (only when machined owns the network and was given an etc folder): renders
 * resolv.conf (first three plain-DNS resolvers, then `search`) and hosts (localhost, this node's default
 * address with its FQDN, IPv6 names, `machine.network.extraHostEntries`) in upstream's layout and writes
 * them into the etc folder. It has no outputs: the files are the result.
 */
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import path from "node:path";
import { hostFiles, type Files } from "../../host/files/index.js";
import type { Controller } from "../../state/runtime/index.js";
import { writeEtcFiles } from "../../host/net/apply.js";
import {
  HostnameStatusType,
  NodeAddressType,
  ResolverStatusType,
  type HostnameStatusSpec,
  type NodeAddressSpec,
  type ResolverStatusSpec,
} from "../../machinery/resources/types/network.js";
import { readSpec } from "../../machinery/resources/read.js";
import { HOSTNAME_ID } from "./hostname-merge.js";
import { RESOLVER_ID } from "./resolver-merge.js";
import { networkSection, NETWORK_NS } from "./shared.js";

export function renderResolvConf(status: ResolverStatusSpec): string {
  const servers = status.nameServers ? status.nameServers.filter((n) => n.protocol === "Do53").map((n) => n.addr) : status.dnsServers;
  let out = servers.slice(0, 3).map((s) => `nameserver ${s}\n`).join("");
  if (status.searchDomains.length) out += `\nsearch ${status.searchDomains.join(" ")}\n`;
  return out;
}

/** Go's tabwriter with padding 1: the first column is as wide as its longest cell plus one space. */
function columns(rows: Array<[string, string]>): string {
  const width = Math.max(...rows.map(([a]) => a.length)) + 1;
  return rows.map(([a, b]) => `${a.padEnd(width)}${b}\n`).join("");
}

export function renderHosts(hostname: HostnameStatusSpec | undefined, defaultAddr: NodeAddressSpec | undefined, extra: Array<{ ip?: string; aliases?: readonly string[] }>): string {
  const rows: Array<[string, string]> = [["127.0.0.1", "localhost"]];
  if (hostname && defaultAddr?.addresses.length) {
    const fqdn = hostname.domainname ? `${hostname.hostname}.${hostname.domainname}` : hostname.hostname;
    const ip = defaultAddr.addresses[0].replace(/\/\d+$/, "");
    rows.push([ip, fqdn !== hostname.hostname ? `${fqdn} ${hostname.hostname}` : fqdn]);
  }
  rows.push(["::1", "localhost ip6-localhost ip6-loopback"], ["ff02::1", "ip6-allnodes"], ["ff02::2", "ip6-allrouters"]);
  const byIP = new Map<string, string[]>();
  for (const e of extra) if (e.ip) byIP.set(e.ip, [...(byIP.get(e.ip) ?? []), ...(e.aliases ?? [])]);
  for (const ip of [...byIP.keys()].sort()) rows.push([ip, byIP.get(ip)!.join(" ")]);
  return columns(rows);
}

export function etcFileController(etcRoot: string, fs: Files = hostFiles): Controller {
  return {
    name: "network.EtcFileController",
    inputs: [
      machineConfigInput,
      { namespace: NETWORK_NS, type: ResolverStatusType.type, id: RESOLVER_ID, kind: "weak" },
      { namespace: NETWORK_NS, type: HostnameStatusType.type, id: HOSTNAME_ID, kind: "weak" },
      { namespace: NETWORK_NS, type: NodeAddressType.type, id: "default", kind: "weak" },
    ],
    outputs: [],
    async reconcile(ctx) {
      const resolvers = readSpec(ctx, ResolverStatusType, RESOLVER_ID);
      const files: Record<string, string> = {
        hosts: renderHosts(
          readSpec(ctx, HostnameStatusType, HOSTNAME_ID),
          readSpec(ctx, NodeAddressType, "default"),
          networkSection(machineConfig(ctx)).extraHostEntries ?? [],
        ),
      };
      if (resolvers) files["resolv.conf"] = renderResolvConf(resolvers);
      // Rewrite only what changed, so readers are not disturbed every reconcile.
      for (const [name, content] of Object.entries(files)) {
        const old = await fs.readFile(path.join(etcRoot, name), "utf8").catch(() => undefined);
        if (old === content) delete files[name];
      }
      if (Object.keys(files).length) {
        await writeEtcFiles(etcRoot, files, fs);
        ctx.log("wrote etc files", { files: Object.keys(files), etcRoot });
      }
    },
  };
}
