/**
 * The real OS test: runs the network controllers in manage mode against a network namespace of our own
 * (`machined-net-<pid>`, veth to a peer namespace, only 10.250.x.y / fd00:: addresses) and checks with
 * `ip -n` that the kernel follows the config, including a config change without a restart, and DHCP via
 * busybox udhcpd/udhcpc when available. Needs root and iproute2; skips itself (saying why) otherwise.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa, type ResultPromise } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { networkControllers } from "../../../src/controllers/network/index.js";
import * as T from "../../../src/machinery/resources/types/network.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import type { ControllerRuntime } from "../../../src/state/runtime/index.js";
import { eventually, eventuallyAsync, setConfig, spec, start } from "./helpers.js";

const NS = `machined-net-${process.pid}`;
const PEER = `machined-net-${process.pid}-peer`;

const sh = (cmd: string, args: string[]) => execa(cmd, args, { reject: false, timeout: 15_000 });
const ipn = async (ns: string, ...args: string[]) => {
  const r = await sh("ip", ["-n", ns, ...args]);
  if (r.exitCode !== 0) throw new Error(`ip -n ${ns} ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
};
const ipJson = async <X>(...args: string[]) => JSON.parse((await ipn(NS, "-j", ...args)) || "[]") as X;

interface IpAddr { ifname: string; mtu: number; flags: string[]; addr_info: Array<{ local: string; prefixlen: number }> }
interface IpRoute { dst: string; gateway?: string; dev?: string; metric?: number; protocol?: string }

const addrs = async (dev: string) =>
  (await ipJson<IpAddr[]>("addr", "show", "dev", dev)).flatMap((l) => l.addr_info.map((a) => `${a.local}/${a.prefixlen}`));
const routes = async () => (await ipJson<IpRoute[]>("-4", "route", "show")).map((r) => `${r.dst} via ${r.gateway ?? "-"} metric ${r.metric ?? 0}`);
const linkOf = async (dev: string) => (await ipJson<IpAddr[]>("link", "show", "dev", dev))[0];

let skipReason = "";
let dhcpReason = "";
let rt: ControllerRuntime | undefined;
let dir = "";
let udhcpd: ResultPromise | undefined;
const s = new InMemoryState();

const config = (addresses: string[], mtu: number, extraRoute: boolean) => `version: v1alpha1
machine:
  type: worker
  network:
    hostname: netns-node.example.test
    nameservers: [10.250.0.1]
    interfaces:
      - interface: veth0
        addresses: [${addresses.join(", ")}]
        mtu: ${mtu}
        routes:
          - network: 0.0.0.0/0
            gateway: 10.250.0.1
${extraRoute ? "          - network: 10.250.9.0/24\n            gateway: 10.250.0.1\n            metric: 100\n" : ""}      - interface: veth2
        dhcp: true
`;

beforeAll(async () => {
  if (process.getuid?.() !== 0) return void (skipReason = "needs root to create network namespaces");
  if ((await sh("ip", ["-V"])).exitCode !== 0) return void (skipReason = "iproute2 (ip) is not installed");
  const add = await sh("ip", ["netns", "add", NS]);
  if (add.exitCode !== 0) return void (skipReason = `cannot create a network namespace: ${add.stderr}`);
  await sh("ip", ["netns", "add", PEER]);
  // Both veth pairs are created inside our namespaces; nothing appears in the host's.
  await ipn(NS, "link", "add", "veth0", "type", "veth", "peer", "name", "veth1", "netns", PEER);
  await ipn(NS, "link", "add", "veth2", "type", "veth", "peer", "name", "veth3", "netns", PEER);
  await ipn(PEER, "addr", "add", "10.250.0.1/24", "dev", "veth1");
  await ipn(PEER, "addr", "add", "10.250.1.1/24", "dev", "veth3");
  for (const dev of ["lo", "veth1", "veth3"]) await ipn(PEER, "link", "set", dev, "up");
  dir = await mkdtemp(path.join(tmpdir(), "machined-netns-"));

  // A DHCP server on the peer side of veth2, when busybox has udhcpd.
  const bb = await sh("busybox", ["udhcpd", "--help"]);
  if (!/udhcpd/i.test(`${bb.stdout}${bb.stderr}`)) dhcpReason = "busybox udhcpd is not available";
  else {
    const conf = path.join(dir, "udhcpd.conf");
    await writeFile(conf, [
      "start 10.250.1.100", "end 10.250.1.110", "interface veth3", `lease_file ${dir}/udhcpd.leases`, `pidfile ${dir}/udhcpd.pid`,
      "option subnet 255.255.255.0", "option router 10.250.1.1", "option dns 10.250.1.1", "option domain dhcp.test", "option lease 600", "",
    ].join("\n"));
    await writeFile(path.join(dir, "udhcpd.leases"), "");
    udhcpd = execa("ip", ["netns", "exec", PEER, "busybox", "udhcpd", "-f", conf], { reject: false });
  }

  setConfig(s, config(["10.250.0.2/24", "fd00::2/64"], 1400, true));
  rt = start(s, networkControllers({ netns: NS, manage: true, etcRoot: path.join(dir, "etc"), retryMs: 200 }));
}, 60_000);

afterAll(async () => {
  await rt?.stop();
  if (udhcpd?.pid) process.kill(udhcpd.pid, "SIGTERM");
  await udhcpd;
  if (!skipReason) {
    await sh("ip", ["netns", "del", NS]);
    await sh("ip", ["netns", "del", PEER]);
  }
  if (dir) await rm(dir, { recursive: true, force: true });
}, 30_000);

describe("network controllers managing a network namespace", () => {
  it("apply the static address, route and MTU from the config", async (ctx) => {
    if (skipReason) {
      console.warn(`skipping netns test: ${skipReason}`);
      ctx.skip();
    }
    await eventuallyAsync(async () => (await addrs("veth0")).includes("10.250.0.2/24"), 15_000, "10.250.0.2/24 on veth0");
    await eventuallyAsync(async () => (await routes()).includes("10.250.9.0/24 via 10.250.0.1 metric 100"), 15_000, "10.250.9.0/24 route");
    await eventuallyAsync(async () => (await routes()).includes("default via 10.250.0.1 metric 1024"), 15_000, "default route");
    await eventuallyAsync(async () => (await addrs("veth0")).includes("fd00::2/64"), 15_000, "fd00::2/64 on veth0");
    const veth0 = await linkOf("veth0");
    expect(veth0.mtu).toBe(1400);
    expect(veth0.flags).toContain("UP");
    expect((await linkOf("lo")).flags).toContain("UP");

    // The statuses observe the namespace, and the node reports ready.
    await eventually(() => spec(s, T.AddressStatusType.type, "veth0/10.250.0.2/24") !== undefined, 10_000, "AddressStatus");
    expect(spec<T.LinkStatusSpec>(s, T.LinkStatusType.type, "veth0")?.mtu).toBe(1400);
    expect(spec(s, T.RouteStatusType.type, "inet4/10.250.0.1//1024")).toMatchObject({ outLinkName: "veth0", protocol: "static" });
    const st = () => spec<T.NetworkStatusSpec>(s, T.NetworkStatusType.type, "status");
    await eventually(() => Object.values(st() ?? { x: false }).every(Boolean), 10_000, `network ready (${JSON.stringify(st())})`);
    // In a netns the hostname is reported from the spec, never set on the (shared) host.
    expect(spec(s, T.HostnameStatusType.type, "hostname")).toEqual({ hostname: "netns-node", domainname: "example.test" });
    // The files are rewritten as the address and resolver statuses settle: wait for the final content.
    const etc = (f: string) => readFile(path.join(dir, "etc", f), "utf8");
    await eventuallyAsync(async () => (await etc("resolv.conf")) === "nameserver 10.250.0.1\n\nsearch example.test\n", 10_000, "resolv.conf");
    await eventuallyAsync(async () => /^10\.250\.0\.2 +netns-node\.example\.test netns-node$/m.test(await etc("hosts")), 10_000, "hosts");
  }, 40_000);

  it("obtains a DHCP lease with udhcpc and applies it", async (ctx) => {
    if (skipReason || dhcpReason) {
      console.warn(`skipping netns DHCP test: ${skipReason || dhcpReason}`);
      ctx.skip();
    }
    await eventuallyAsync(async () => (await addrs("veth2")).some((a) => /^10\.250\.1\.1\d\d\/24$/.test(a)), 30_000, "DHCP address on veth2");
    await eventuallyAsync(async () => (await routes()).includes("default via 10.250.1.1 metric 1024"), 15_000, "DHCP default route");
    expect(spec<T.ResolverSpecSpec>(s, T.ResolverSpecType.type, "resolvers")).toMatchObject({ dnsServers: ["10.250.0.1"], layer: "configuration" });
    expect(spec<T.ResolverSpecSpec>(s, T.ResolverSpecType.type, "resolvers")?.searchDomains).toContain("dhcp.test");
  }, 45_000);

  it("follows a config change without a restart: old address and route removed, new ones added", async (ctx) => {
    if (skipReason) ctx.skip();
    setConfig(s, config(["10.250.0.3/24"], 1450, false));
    await eventuallyAsync(async () => (await addrs("veth0")).includes("10.250.0.3/24"), 15_000, "new address");
    await eventuallyAsync(async () => !(await addrs("veth0")).includes("10.250.0.2/24"), 15_000, "old address removed");
    await eventuallyAsync(async () => !(await addrs("veth0")).includes("fd00::2/64"), 15_000, "old IPv6 address removed");
    await eventuallyAsync(async () => !(await routes()).some((r) => r.startsWith("10.250.9.0/24")), 15_000, "old route removed");
    await eventuallyAsync(async () => (await routes()).includes("default via 10.250.0.1 metric 1024"), 15_000, "default route kept");
    await eventuallyAsync(async () => (await linkOf("veth0")).mtu === 1450, 15_000, "new MTU");
    await eventually(() => spec(s, T.AddressStatusType.type, "veth0/10.250.0.2/24") === undefined, 10_000, "AddressStatus follows");
    expect(spec(s, T.AddressStatusType.type, "veth0/10.250.0.3/24")).toMatchObject({ linkName: "veth0", family: "inet4" });
  }, 60_000);
});
