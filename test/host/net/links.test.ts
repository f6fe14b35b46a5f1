import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  type IpLink, type LinkStatusSpec, enrichFromSysfs, hardwareAddr, linkFlags, linkFlagsText, parseLinks,
} from "../../../src/host/net/index.js";

// Captured with `ip -n <ns> -N -j -d link show` from a namespace with a veth pair va/vb and vb in bridge br0.
const LINKS: IpLink[] = JSON.parse(readFileSync(new URL("../fixtures/ip/link.json", import.meta.url), "utf8"));
const ROOT = fileURLToPath(new URL("../fixtures/x86", import.meta.url));

describe("LinkStatus from ip link", () => {
  const byId = Object.fromEntries(parseLinks(LINKS).map((l) => [l.id, l.spec]));

  it("uses link names as ids", () => {
    expect(Object.keys(byId)).toEqual(["lo", "vb", "va", "br0"]);
  });

  it("renders loopback like Talos, keys in upstream order", () => {
    expect(byId.lo).toEqual({
      index: 1,
      type: "loopback",
      linkIndex: 0,
      flags: "UP,LOOPBACK,RUNNING,LOWER_UP",
      hardwareAddr: "00:00:00:00:00:00",
      permanentAddr: "",
      broadcastAddr: "00:00:00:00:00:00",
      mtu: 65536,
      queueDisc: "noqueue",
      operationalState: "unknown",
      kind: "",
      slaveKind: "",
      linkState: true,
      port: "Other",
      duplex: "Unknown",
    });
    expect(Object.keys(byId.lo)).toEqual([
      "index", "type", "linkIndex", "flags", "hardwareAddr", "permanentAddr", "broadcastAddr", "mtu", "queueDisc",
      "operationalState", "kind", "slaveKind", "linkState", "port", "duplex",
    ]);
  });

  it("describes veth peers, alias, altnames and bridge membership", () => {
    expect(byId.va).toMatchObject({
      alias: "uplink", altNames: ["uplink0"], index: 3, type: "ether", linkIndex: 2, kind: "veth",
      flags: "UP,BROADCAST,RUNNING,MULTICAST,LOWER_UP", operationalState: "up", veth: { peerName: "vb" },
    });
    expect(Object.keys(byId.va)[0]).toBe("alias");
    expect(byId.vb).toMatchObject({ masterIndex: 4, slaveKind: "bridge", veth: { peerName: "va" } });
    expect(byId.br0).toMatchObject({ kind: "bridge", hardwareAddr: byId.vb.hardwareAddr });
    // STP and VLAN filtering are off, so upstream omits bridgeMaster entirely.
    expect(byId.br0.bridgeMaster).toBeUndefined();
  });

  it("rebuilds RUNNING that iproute2 hides", () => {
    expect(linkFlagsText(linkFlags(["BROADCAST", "MULTICAST", "UP", "LOWER_UP"]))).toBe("UP,BROADCAST,RUNNING,MULTICAST,LOWER_UP");
    expect(linkFlagsText(linkFlags(["NO-CARRIER", "BROADCAST", "MULTICAST", "UP"]))).toBe("UP,BROADCAST,MULTICAST");
    expect(linkFlagsText(linkFlags(["POINTOPOINT", "NOARP", "M-DOWN"]))).toBe("POINTTOPOINT,NOARP");
  });

  it("prints tunnel endpoint addresses as raw bytes", () => {
    expect(hardwareAddr("10.0.0.1")).toBe("0a:00:00:01");
    expect(hardwareAddr("::")).toBe(Array(16).fill("00").join(":"));
    expect(hardwareAddr("AA:BB:CC:00:11:22")).toBe("aa:bb:cc:00:11:22");
    expect(hardwareAddr(undefined)).toBe("");
  });

  it("decodes VLAN and STP-enabled bridge details", () => {
    const [vlan, br] = parseLinks([
      { ifindex: 5, ifname: "eth0.10", link: "eth0", linkinfo: { info_kind: "vlan", info_data: { protocol: "802.1Q", id: 10 } } },
      { ifindex: 6, ifname: "br1", linkinfo: { info_kind: "bridge", info_data: { stp_state: 1, vlan_filtering: 0 } } },
    ]);
    expect(vlan.spec.vlan).toEqual({ vlanID: 10, vlanProtocol: "802.1q" });
    expect(br.spec.bridgeMaster).toEqual({ stp: { enabled: true } });
  });

  it("adds sysfs device facts in the host namespace", async () => {
    const spec = { duplex: "Unknown" } as LinkStatusSpec;
    await enrichFromSysfs(spec, "eth0", ROOT);
    expect(spec).toMatchObject({ driver: "e1000e", pciID: "8086:15BB", busPath: "0000:00:1f.6", speedMbit: 1000, duplex: "Full" });
    const lo = { duplex: "Unknown" } as LinkStatusSpec;
    await enrichFromSysfs(lo, "lo", ROOT);
    expect(lo).toEqual({ duplex: "Unknown" });
  });
});
