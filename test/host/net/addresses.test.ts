import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type IpAddrLink, addressFlags, addressFlagsText, parseAddresses } from "../../../src/host/net/index.js";

// Captured with `ip -n <ns> -N -j addr show` (same namespace as link.json).
const ADDRS: IpAddrLink[] = JSON.parse(readFileSync(new URL("../fixtures/ip/addr.json", import.meta.url), "utf8"));

describe("AddressStatus from ip addr", () => {
  const byId = Object.fromEntries(parseAddresses(ADDRS).map((a) => [a.id, a.spec]));

  it("keys addresses as <link>/<addr>/<bits>", () => {
    expect(Object.keys(byId)).toEqual([
      "lo/127.0.0.1/8", "lo/::1/128", "vb/fe80::58f7:efff:feef:d43c/64", "va/10.250.1.1/24", "va/10.250.2.2/32",
      "va/fd00:250::1/64", "va/fe80::a0e0:94ff:fef2:b734/64", "br0/fe80::58f7:efff:feef:d43c/64",
    ]);
  });

  it("renders IPv4 with local, upstream key order", () => {
    expect(byId["va/10.250.1.1/24"]).toEqual({
      address: "10.250.1.1/24", local: "10.250.1.1", linkIndex: 3, linkName: "va", family: "inet4",
      scope: "global", flags: "permanent", priority: 0,
    });
    expect(Object.keys(byId["lo/127.0.0.1/8"])).toEqual(["address", "local", "linkIndex", "linkName", "family", "scope", "flags", "priority"]);
    expect(byId["lo/127.0.0.1/8"].scope).toBe("host");
  });

  it("keys point-to-point addresses on the peer, like netlink's IFA_ADDRESS", () => {
    expect(byId["va/10.250.2.2/32"]).toMatchObject({ address: "10.250.2.2/32", local: "10.250.2.1" });
  });

  it("omits local for IPv6 and decodes flags", () => {
    expect(byId["va/fd00:250::1/64"]).toEqual({
      address: "fd00:250::1/64", linkIndex: 3, linkName: "va", family: "inet6", scope: "global",
      flags: "nodad,permanent", priority: 0,
    });
    expect(byId["va/fe80::a0e0:94ff:fef2:b734/64"].scope).toBe("link");
  });

  it("maps iproute2 flag booleans onto IFA_F bits", () => {
    const bits = addressFlags({ family: "inet6", prefixlen: 64, dynamic: true, temporary: true, mngtmpaddr: true, noprefixroute: true });
    expect(addressFlagsText(bits)).toBe("temporary,mngmtmpaddr,noprefixroute");
    expect(addressFlagsText(addressFlags({ family: "inet", prefixlen: 24, "stable-privacy": true, ifa_flags: "1000" }))).toBe("permanent,stableprivacy");
  });
});
