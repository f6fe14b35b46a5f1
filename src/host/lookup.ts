/**
 * Name resolution for hosts in the machine config (the cluster endpoint): the system resolver (hosts file,
 * then DNS), every address of both families, IPv4-mapped IPv6 addresses unmapped (Go's LookupNetIP + Unmap).
 * An IP literal resolves to itself.
 */
import { lookup } from "node:dns/promises";

export type HostLookup = (host: string) => Promise<string[]>;

export const lookupHost: HostLookup = async (host) => {
  try {
    const addrs = await lookup(host, { all: true, verbatim: true });
    return [...new Set(addrs.map((a) => a.address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, "$1")))];
  } catch (e) {
    const code = (e as { code?: string }).code;
    const why = code === "ENOTFOUND" || code === "EAI_NONAME" ? "no such host" : (e as Error).message;
    throw new Error(`lookup ${host}: ${why}`);
  }
};
