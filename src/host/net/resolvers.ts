/** /etc/resolv.conf → the ResolverStatus spec (id `resolvers`). */
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { Observed, ResolverStatusSpec } from "./types.js";

export const RESOLVER_ID = "resolvers";

export function parseResolvConf(text: string): ResolverStatusSpec {
  const dnsServers: string[] = [];
  let searchDomains: string[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.replace(/[#;].*$/, "").trim();
    const [key, ...args] = line.split(/\s+/);
    if (key === "nameserver" && args[0]) dnsServers.push(args[0]);
    // resolv.conf(5): "domain" and "search" override each other, the last one wins.
    else if (key === "search") searchDomains = args;
    else if (key === "domain" && args[0]) searchDomains = [args[0]];
  }
  return {
    dnsServers,
    // Upstream lists each server again with its transport; resolv.conf servers are plain DNS over port 53.
    ...(dnsServers.length ? { nameServers: dnsServers.map((addr) => ({ addr, protocol: "Do53", tlsServerName: "" })) } : {}),
    searchDomains,
  };
}

export async function observeResolvers(opts?: { root?: string }): Promise<Observed<ResolverStatusSpec>> {
  let text = "";
  try {
    text = await readFile(path.join(opts?.root ?? "/", "etc/resolv.conf"), "utf8");
  } catch (err) {
    // No resolv.conf means no resolvers configured, not a failure.
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  return { id: RESOLVER_ID, spec: parseResolvConf(text) };
}
