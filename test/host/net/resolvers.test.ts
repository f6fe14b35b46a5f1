import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { hostnameSpec, observeHostname, observeResolvers, parseResolvConf } from "../../../src/host/net/index.js";

const ROOT = fileURLToPath(new URL("../fixtures/x86", import.meta.url));

describe("ResolverStatus from resolv.conf", () => {
  it("collects name servers and the last search/domain line", () => {
    const spec = parseResolvConf(
      "# generated\nnameserver 10.0.0.53\nnameserver fd00::53 # v6\nsearch a.example b.example\noptions ndots:2\ndomain c.example\nsearch d.example e.example\n",
    );
    expect(spec).toEqual({
      dnsServers: ["10.0.0.53", "fd00::53"],
      nameServers: [
        { addr: "10.0.0.53", protocol: "Do53", tlsServerName: "" },
        { addr: "fd00::53", protocol: "Do53", tlsServerName: "" },
      ],
      searchDomains: ["d.example", "e.example"],
    });
    expect(Object.keys(spec)).toEqual(["dnsServers", "nameServers", "searchDomains"]);
  });

  it("reads <root>/etc/resolv.conf and tolerates its absence", async () => {
    expect(await observeResolvers({ root: ROOT })).toEqual({
      id: "resolvers",
      spec: { dnsServers: ["10.255.255.53"], nameServers: [{ addr: "10.255.255.53", protocol: "Do53", tlsServerName: "" }], searchDomains: [] },
    });
    const empty = await observeResolvers({ root: mkdtempSync(path.join(os.tmpdir(), "resolv-")) });
    expect(empty.spec).toEqual({ dnsServers: [], searchDomains: [] });
  });
});

describe("HostnameStatus", () => {
  it("reads the kernel names from a root", async () => {
    expect(await observeHostname({ root: ROOT })).toEqual({ id: "hostname", spec: { hostname: "node-1", domainname: "" } });
  });

  it("splits an FQDN hostname when no domain is set", () => {
    expect(hostnameSpec("node-1.example.org", "")).toEqual({ hostname: "node-1", domainname: "example.org" });
    expect(hostnameSpec("node-1", "example.org")).toEqual({ hostname: "node-1", domainname: "example.org" });
  });

  it("matches this machine", async () => {
    expect((await observeHostname()).spec.hostname).toBe(os.hostname().split(".")[0]);
  });
});
